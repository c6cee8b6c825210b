package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/subspace/kbkit/loadgen"
	"github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/report"
)

// console shows a run's live state: on a terminal a multi-line mpb
// display (progress, target vs achieved rate, in flight, recent p99,
// errors), elsewhere a plain line every few seconds.
type console struct {
	mu    sync.Mutex
	st    loadgen.Status
	title string
	p     *mpb.Progress
	bar   *mpb.Bar
	total int64
	plain io.Writer
	last  time.Time
	done  sync.Once
}

// Console modes.
const (
	consolePlain  = iota // a plain line every few seconds
	consoleLive          // the multi-line display, on a terminal with a size
	consoleForced        // the multi-line display forced (--tty) where it would not redraw by itself
)

// consoleMode picks how a run shows its progress on w: the live display on
// a terminal that reports its size, else plain lines; --tty forces the
// live display even into a file or pipe (it then redraws on a timer), but
// not on a terminal that reports no size, where it would print nothing.
func consoleMode(w io.Writer, tty, isTerminal bool) (mode int, note string) {
	_, _, sized := termSize(w)
	switch {
	case isTerminal && sized:
		return consoleLive, ""
	case isTerminal:
		return consolePlain, "the terminal reports no size (columns or rows 0): plain progress lines"
	case tty:
		return consoleForced, ""
	}
	return consolePlain, ""
}

func newConsole(w io.Writer, mode int, title string, d time.Duration) *console {
	c := &console{title: title, total: d.Milliseconds()}
	if mode == consolePlain {
		c.plain = w
		return c
	}
	opts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(250 * time.Millisecond)}
	if mode == consoleForced {
		opts = append(opts, mpb.WithAutoRefresh())
	}
	c.p = mpb.New(opts...)
	line := func(f func(loadgen.Status) string) mpb.BarFiller {
		return mpb.BarFillerFunc(func(w io.Writer, _ decor.Statistics) error {
			c.mu.Lock()
			s := f(c.st)
			c.mu.Unlock()
			_, err := fmt.Fprintln(w, s)
			return err
		})
	}
	c.bar = c.p.New(c.total, mpb.BarStyle(),
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
			c.mu.Lock()
			defer c.mu.Unlock()
			return fmt.Sprintf("%s  %-8s", c.title, c.st.Phase)
		}, decor.WC{C: decor.DSyncSpaceR})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.st.Warmup > 0 {
				return fmt.Sprintf("warm-up %s", c.st.Warmup.Round(time.Second))
			}
			return fmt.Sprintf("%s / %s", c.st.Elapsed.Round(time.Second), c.st.Duration)
		})),
		mpb.BarBtmExtender(line(rateLine), line(latencyLine), line(countLine)),
	)
	return c
}

func rateLine(s loadgen.Status) string {
	if s.Phase == "" || s.Phase == "setup" { // no window is open yet: not "0 windows on 0 pages"
		return "  setting up: creating the pages, opening and subscribing the windows"
	}
	target := "closed model"
	if s.Model == loadgen.Open {
		target = fmt.Sprintf("target %7.1f/s", s.Target)
	}
	pages := "pages"
	if s.Pages == 1 {
		pages = "page"
	}
	return fmt.Sprintf("  rate     %s   achieved %7.1f/s   in flight %4d   %d windows on %d %s",
		target, s.Achieved, s.InFlight, s.Windows, s.Pages, pages)
}

func latencyLine(s loadgen.Status) string {
	var b strings.Builder
	b.WriteString("  p99 5s  ")
	for _, n := range metrics.IntervalLatencies {
		fmt.Fprintf(&b, " %s %-9s", n, report.Dur(s.Recent[n]))
	}
	return b.String()
}

func countLine(s loadgen.Status) string {
	t := s.Totals
	return fmt.Sprintf("  totals   committed %d  rejected %d  errors %d  dropped %d  retries %d  refetches %d  reconnects %d",
		t.Committed, t.Rejections, t.Errors, t.Dropped, t.Retries, t.Refetches, t.Reconnects)
}

// update takes a new status (loadgen.Config.Status).
func (c *console) update(s loadgen.Status) {
	c.mu.Lock()
	c.st = s
	c.mu.Unlock()
	if c.bar != nil {
		c.bar.SetCurrent(min(s.Elapsed.Milliseconds(), c.total-1))
		return
	}
	if c.plain != nil && s.Phase == "load" && time.Since(c.last) >= 5*time.Second {
		c.last = time.Now()
		target := ""
		if s.Model == loadgen.Open {
			target = fmt.Sprintf("target %.1f/s, ", s.Target)
		}
		fmt.Fprintf(c.plain, "%s %s/%s: %sachieved %.1f/s, in flight %d; p99 commit %s echo %s fanout %s; errors %d, dropped %d\n",
			c.title, s.Elapsed.Round(time.Second), s.Duration, target, s.Achieved, s.InFlight,
			report.Dur(s.Recent[metrics.Commit]), report.Dur(s.Recent[metrics.Echo]), report.Dur(s.Recent[metrics.Fanout]),
			s.Totals.Errors, s.Totals.Dropped)
	}
}

// close ends the display.
func (c *console) close() {
	c.done.Do(func() {
		if c.bar != nil {
			c.bar.SetCurrent(c.total)
			c.p.Wait()
		}
	})
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
