package timeline

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Lane kinds.
const (
	LaneWindow   = "window"
	LaneInstance = "instance"
	LaneDatabase = "database"
	LaneLog      = "log"
)

// Event kinds.
const (
	KindOpen    = "open"    // a window opened at a snapshot
	KindIssue   = "issue"   // a command entered a window (pending from here)
	KindUndo    = "undo"    // the user undid (the commands it issues link to what they revert)
	KindRedo    = "redo"    // the user redid
	KindToast   = "toast"   // the window told the user something (a rejection, nothing to undo)
	KindCommand = "command" // a command, from its first POST to the server's decision
	KindPost    = "post"    // one POST of kb.command, to its answer
	KindEcho    = "echo"    // an event of the window's subscription applied
	KindRefetch = "refetch" // kb.page with the pending ids, to the snapshot
	KindFault   = "fault"   // an injected fault
	KindLog     = "log"     // an entry of a page's log
	KindNote    = "note"    // anything else worth a mark (stall, resubscribe)
)

// Lane is one column of the timeline.
type Lane struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Kind  string `json:"kind"`
	// Detail is shown when the lane's header is hovered.
	Detail string `json:"detail,omitempty"`
}

// Event is one mark on a lane. Times are nanoseconds since the seed began.
type Event struct {
	ID   int    `json:"id"`
	Lane string `json:"lane"`
	Kind string `json:"kind"`
	At   int64  `json:"at"`
	// End is the end of a span (command, post, refetch); 0 for a mark.
	End int64 `json:"end,omitempty"`
	// Open is a span that never ended (an undecided command).
	Open  bool   `json:"open,omitempty"`
	Label string `json:"label"`
	// Cmd, Page, Window and Seq say what the event is about (a finding
	// that names them links to it); Window is -1 when none.
	Cmd    string `json:"cmd,omitempty"`
	Page   string `json:"page,omitempty"`
	Window int    `json:"win"`
	Seq    int64  `json:"seq,omitempty"`
	// Status is the decision or outcome: "seq 5", "rejected not-found",
	// "lost (fault)", "retryable: ...".
	Status string `json:"status,omitempty"`
	// Envelope and Answer are what went over the wire (JSON text).
	Envelope string `json:"env,omitempty"`
	Answer   string `json:"answer,omitempty"`
	// State is the window's seq and pending commands at that moment.
	State string `json:"state,omitempty"`
	// Links are related events: an echo's command, an undo's reverted
	// commands, a refetch's decided commands.
	Links []int `json:"links,omitempty"`
	Fault bool  `json:"fault,omitempty"`
}

// Finding is one checker finding and the events it is about.
type Finding struct {
	ID      int    `json:"id"`
	Checker string `json:"checker"`
	Text    string `json:"text"`
	Events  []int  `json:"events"`
}

// Check is one checker's verdict, for the page's table.
type Check struct {
	Name    string
	Passed  bool
	Skipped bool
	Detail  string
}

// DocView is one final document: the fold of a page's log, or a window's
// rendering of it.
type DocView struct {
	Label string
	Lines []string
	// Diff is the window's document against the fold of the log, set
	// when they differ.
	Diff []DiffLine
}

// PageDocs are the final documents of one page.
type PageDocs struct {
	Page    string
	Label   string
	Log     DocView
	Windows []DocView
}

// Timeline is one seed.
type Timeline struct {
	Title   string
	Seed    int64
	Faults  string
	Replay  string
	Failed  bool
	Summary string
	// EndAt is when the run ended (open spans end there).
	EndAt    int64
	Lanes    []Lane
	Events   []Event
	Findings []Finding
	Checks   []Check
	Docs     []PageDocs
}

// AddLane adds a lane and returns its id.
func (t *Timeline) AddLane(l Lane) string {
	t.Lanes = append(t.Lanes, l)
	return l.ID
}

// HasLane reports whether a lane of that id exists.
func (t *Timeline) HasLane(id string) bool {
	for _, l := range t.Lanes {
		if l.ID == id {
			return true
		}
	}
	return false
}

// Add adds an event and returns its id.
func (t *Timeline) Add(e Event) int {
	e.ID = len(t.Events)
	t.Events = append(t.Events, e)
	return e.ID
}

// Event returns the event of an id (nil if none).
func (t *Timeline) Event(id int) *Event {
	if id < 0 || id >= len(t.Events) {
		return nil
	}
	return &t.Events[id]
}

var (
	uuidRe   = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	shortRe  = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
	windowRe = regexp.MustCompile(`\b(?:window |w)(\d+)\b`)
	seqRe    = regexp.MustCompile(`\bseqs? (\d+)\b`)
)

// AddFinding adds a finding and links it to the events it names: the
// commands (full or short ids), the pages, the windows and the seqs it
// mentions. A command links to its span, posts, issue, log entries and
// echoes (only at the windows named, when some are); a seq links to the
// log entry of the page at that seq and to the named windows' events at
// it; a window named alone links to its last event.
func (t *Timeline) AddFinding(checker, text string) int {
	cmds, pages := map[string]bool{}, map[string]bool{}
	known := map[string]string{} // id or short id -> kind
	for _, e := range t.Events {
		if e.Cmd != "" {
			known[e.Cmd], known[short(e.Cmd)] = "cmd", "cmd"
		}
		if e.Page != "" {
			known[e.Page], known[short(e.Page)] = "page", "page"
		}
	}
	full := map[string]string{} // short -> full
	for _, e := range t.Events {
		if e.Cmd != "" {
			full[short(e.Cmd)] = e.Cmd
		}
		if e.Page != "" {
			full[short(e.Page)] = e.Page
		}
	}
	rest := text
	for _, id := range uuidRe.FindAllString(text, -1) {
		rest = strings.ReplaceAll(rest, id, " ")
		switch known[id] {
		case "cmd":
			cmds[id] = true
		case "page":
			pages[id] = true
		}
	}
	for _, s := range shortRe.FindAllString(rest, -1) {
		switch known[s] {
		case "cmd":
			cmds[full[s]] = true
		case "page":
			pages[full[s]] = true
		}
	}
	wins := map[int]bool{}
	for _, m := range windowRe.FindAllStringSubmatch(rest, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			wins[n] = true
		}
	}
	var seqs []int64
	for _, m := range seqRe.FindAllStringSubmatch(rest, -1) {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			seqs = append(seqs, n)
		}
	}
	if len(pages) == 0 {
		// The pages of the commands and windows named.
		for _, e := range t.Events {
			if (cmds[e.Cmd] && e.Kind == KindCommand) || (wins[e.Window] && e.Kind == KindOpen) {
				pages[e.Page] = true
			}
		}
	}
	picked := map[int]bool{}
	for _, e := range t.Events {
		switch {
		case cmds[e.Cmd] && e.Kind == KindEcho && len(wins) > 0 && !wins[e.Window]:
		case cmds[e.Cmd]:
			picked[e.ID] = true
		}
		for _, q := range seqs {
			if e.Seq != q || !pages[e.Page] {
				continue
			}
			if e.Kind == KindLog || (wins[e.Window] && e.Window >= 0 && e.Kind != KindCommand && e.Kind != KindPost) {
				picked[e.ID] = true
			}
		}
	}
	if len(picked) == 0 && len(wins) == 0 {
		// A page named alone (a linearizability finding): its log.
		for _, e := range t.Events {
			if e.Kind == KindLog && pages[e.Page] {
				picked[e.ID] = true
			}
		}
	}
	if len(picked) == 0 {
		for w := range wins {
			last := -1
			for _, e := range t.Events {
				if e.Window == w && (last < 0 || e.At >= t.Events[last].At) {
					last = e.ID
				}
			}
			if last >= 0 {
				picked[last] = true
			}
		}
	}
	ids := make([]int, 0, len(picked))
	for id := range picked {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := t.Events[ids[i]], t.Events[ids[j]]
		if a.At != b.At {
			return a.At < b.At
		}
		return a.ID < b.ID
	})
	f := Finding{ID: len(t.Findings), Checker: checker, Text: text, Events: ids}
	t.Findings = append(t.Findings, f)
	return f.ID
}

// SplitFindings splits a checker's detail into findings: a line that is
// not indented starts one, indented lines continue it.
func SplitFindings(detail string) []string {
	var out []string
	for _, line := range strings.Split(detail, "\n") {
		if line == "" {
			continue
		}
		if len(out) > 0 && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) {
			out[len(out)-1] += "\n" + line
			continue
		}
		out = append(out, line)
	}
	return out
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// DiffLine is one line of a diff: Op ' ' (both), '-' (only in the fold of
// the log), '+' (only in the window).
type DiffLine struct {
	Op   byte
	Text string
}

// maxDiffLines bounds the quadratic diff; past it lines are compared by
// position.
const maxDiffLines = 3000

// Diff is a line diff of b against a (longest common subsequence).
func Diff(a, b []string) []DiffLine {
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		var out []DiffLine
		for i := 0; i < max(len(a), len(b)); i++ {
			switch {
			case i < len(a) && i < len(b) && a[i] == b[i]:
				out = append(out, DiffLine{' ', a[i]})
			default:
				if i < len(a) {
					out = append(out, DiffLine{'-', a[i]})
				}
				if i < len(b) {
					out = append(out, DiffLine{'+', b[i]})
				}
			}
		}
		return out
	}
	n, m := len(a), len(b)
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []DiffLine
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, DiffLine{' ', a[i]})
			i++
			j++
		case l[i+1][j] >= l[i][j+1]:
			out = append(out, DiffLine{'-', a[i]})
			i++
		default:
			out = append(out, DiffLine{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, DiffLine{'-', a[i]})
	}
	for ; j < m; j++ {
		out = append(out, DiffLine{'+', b[j]})
	}
	return out
}

// Differs reports whether a diff has a changed line.
func Differs(d []DiffLine) bool {
	for _, l := range d {
		if l.Op != ' ' {
			return true
		}
	}
	return false
}
