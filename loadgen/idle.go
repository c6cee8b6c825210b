package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	lgeditor "github.com/subspace/kbkit/loadgen/editor"
	"github.com/subspace/kbkit/target"
)

// IdleConfig configures OpenIdle.
type IdleConfig struct {
	// Windows to open.
	Windows int
	// Page to open them on; empty: create a page.
	Page string
	// Concurrency of the opening (default 64).
	Concurrency int
}

// IdleReport says what OpenIdle opened.
type IdleReport struct {
	Windows    int              `json:"windows"`
	Subscribed int              `json:"subscribed"`
	Page       string           `json:"page"`
	Seconds    float64          `json:"open_seconds"`
	Errors     map[string]int64 `json:"errors"`
}

// IdleWindows are open, idle windows (see OpenIdle).
type IdleWindows struct {
	subs []*client.Subscription
	wg   sync.WaitGroup
}

// OpenIdle opens cfg.Windows windows on one page, each a Window with its
// own WebSocket and subscription, as a browser tab would, and returns once
// every subscription has delivered the page's last command: the server
// then holds all of them. They stay open, applying any echo, until Close.
// It is how the server's memory per idle subscribed window is measured.
func OpenIdle(ctx context.Context, target target.Target, cfg IdleConfig) (*IdleWindows, IdleReport, error) {
	rep := IdleReport{Windows: cfg.Windows, Errors: map[string]int64{}}
	if cfg.Windows <= 0 {
		return nil, rep, errors.New("loadgen: idle: need at least one window")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	eps := target.Endpoints()
	tokens, err := target.Devices(ctx, 1)
	if err != nil {
		return nil, rep, err
	}
	c := client.New(eps[0], tokens[0])
	me, err := c.Whoami(ctx)
	if err != nil {
		return nil, rep, fmt.Errorf("loadgen: idle: kb.whoami: %w", err)
	}
	page := cfg.Page
	if page == "" {
		page = uuid.NewString()
		b, _ := json.Marshal(map[string]any{"title": "LG idle " + page[:8]})
		env := kbcore.Envelope{ID: uuid.NewString(), DeviceID: me.DeviceID, PageID: page, Type: kbcore.TypeCreatePage, Payload: b}
		err := retry(ctx, 20, func() error {
			_, rej, err := c.Command(ctx, env)
			if err == nil && rej != nil {
				return fmt.Errorf("loadgen: idle: create-page rejected: %s", rej.Message)
			}
			return err
		})
		if err != nil {
			return nil, rep, err
		}
	}
	rep.Page = page
	snap, err := c.Page(ctx, page, nil)
	if err != nil {
		return nil, rep, fmt.Errorf("loadgen: idle: kb.page: %w", err)
	}
	if snap.Seq < 1 {
		return nil, rep, errors.New("loadgen: idle: the page has no command")
	}

	iw := &IdleWindows{subs: make([]*client.Subscription, cfg.Windows)}
	var mu sync.Mutex
	var ok atomic.Int64
	start := time.Now()
	_ = parallel(ctx, cfg.Windows, cfg.Concurrency, func(i int) error {
		w := kbcore.NewWindow(snap.Doc, snap.Seq)
		var sub *client.Subscription
		// Subscribing from one before the head makes the server replay the
		// head: its arrival proves the subscription is registered.
		err := retry(ctx, 20, func() error {
			var err error
			sub, err = c.Subscribe(ctx, page, snap.Seq-1)
			return err
		})
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			var ev client.Event
			ev, err = sub.Next(wctx)
			cancel()
			if err != nil {
				sub.Close()
			} else {
				w.Echo(ev.Seq, ev.Cmd)
			}
		}
		if err != nil {
			mu.Lock()
			rep.Errors[lgeditor.ErrorKind(err)]++
			mu.Unlock()
			return nil
		}
		ok.Add(1)
		iw.subs[i] = sub
		iw.wg.Go(func() {
			for ev := range sub.Events() {
				w.Echo(ev.Seq, ev.Cmd)
			}
		})
		return nil
	})
	rep.Subscribed = int(ok.Load())
	rep.Seconds = time.Since(start).Seconds()
	if rep.Subscribed == 0 {
		return nil, rep, fmt.Errorf("loadgen: idle: no window could subscribe (%v)", rep.Errors)
	}
	return iw, rep, ctx.Err()
}

// Close closes every window.
func (iw *IdleWindows) Close() {
	for _, s := range iw.subs {
		if s != nil {
			s.Close()
		}
	}
	iw.wg.Wait()
}
