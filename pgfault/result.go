package pgfault

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

// Result is what a run measured. Durations are in seconds; a figure that
// could not be measured is -1.
type Result struct {
	Topology          string `json:"topology"`
	SynchronousCommit string `json:"synchronous_commit"`
	Writers           int    `json:"writers"`
	SharedWriters     int    `json:"shared_writers"`
	Pages             int    `json:"pages"`
	Instances         int    `json:"instances"`
	Reseed            bool   `json:"reseed"`

	// Acknowledged: command ids the server answered committed (seq).
	Acknowledged int `json:"acknowledged"`
	// Found: acknowledged ids in the new primary's log at the seq of
	// their answer. Lost: not in the log at all. Misplaced: in the log
	// at another seq.
	Found     int `json:"found"`
	Lost      int `json:"lost"`
	Misplaced int `json:"misplaced"`
	// Duplicated: ids in the log more than once, or answered with two
	// different seqs.
	Duplicated int `json:"duplicated"`
	// SeqReused: (page, seq) slots that clients were told hold one
	// command (an answer or an echo) and that the log gives to another
	// (or to none).
	SeqReused int `json:"seq_reused"`
	// Rejected: decisions against commands that were all valid. Refused:
	// answers that were neither a decision nor retryable. Undecided:
	// commands still undecided when the settle time ran out.
	Rejected  int `json:"rejected"`
	Refused   int `json:"refused"`
	Undecided int `json:"undecided"`

	Attempts       int `json:"attempts"`
	FailedAttempts int `json:"failed_attempts"`
	// DuplicateAnswers: retries answered with the outcome of a commit
	// whose first answer was lost (duplicate: true).
	DuplicateAnswers int  `json:"duplicate_answers"`
	Gapless          bool `json:"gapless"`
	Windows          int  `json:"windows"`
	// Converged: windows at their page's final head with nothing pending
	// and the server document equal to the fold of the log.
	Converged int `json:"converged"`

	// WritesFailed: the union of the spans of the attempts that failed.
	WritesFailed float64 `json:"writes_failed_s"`
	// NoAckFor: the longest time, during the load, in which no writer got
	// a command answered committed (the outage as clients feel it, also
	// when the server's own retries hide the failures: blocked commits
	// during the stall and the promotion). SlowestCommand: the longest
	// time from a command's issue to its committed answer, retries
	// included.
	NoAckFor       float64 `json:"no_ack_for_s"`
	SlowestCommand float64 `json:"slowest_command_s"`
	// PromotionToFirstWrite: from the promotion to the first command
	// answered committed after it.
	PromotionToFirstWrite float64 `json:"promotion_to_first_write_s"`
	// PromotionToConverged: from the promotion until every window had
	// applied its page's log up to the head at the promotion with nothing
	// issued before it still pending; -1 unless every window converged.
	PromotionToConverged float64 `json:"promotion_to_converged_s"`

	// For a link fault (Config.Fault) instead of a failover: the fault,
	// how long it was held, the time from the fault to the first answer
	// of a call in flight then or made during it, the longest such call
	// and its bound
	// (AnswerBound). The promotion figures are then from the heal.
	Fault              string  `json:"fault,omitempty"`
	Hold               float64 `json:"hold_s,omitempty"`
	FaultToFirstAnswer float64 `json:"fault_to_first_answer_s,omitempty"`
	LongestAnswer      float64 `json:"longest_answer_s,omitempty"`
	AnswerBound        float64 `json:"answer_bound_s,omitempty"`

	// SplitBrain: the figures of the split-brain scenario (fencing.go).
	SplitBrain *SplitBrain `json:"split_brain,omitempty"`
	// Soak: the figures of a soak (Config.Soak).
	Soak *SoakFigures `json:"soak,omitempty"`

	Timeline    Timeline `json:"timeline"`
	LostPrimary string   `json:"lost_primary"`
	NewPrimary  string   `json:"new_primary"`
	Findings    []string `json:"findings"`
}

// Timeline: when each step happened, in seconds from the load's start.
type Timeline struct {
	Stalled  time.Duration `json:"-"`
	Lost     time.Duration `json:"-"`
	Promoted time.Duration `json:"-"`
	Reseeded time.Duration `json:"-"`
	LoadEnd  time.Duration `json:"-"`
}

// MarshalJSON writes the timeline in seconds.
func (t Timeline) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"stalled_s":%.3f,"lost_s":%.3f,"promoted_s":%.3f,"reseeded_s":%.3f,"load_end_s":%.3f}`,
		t.Stalled.Seconds(), t.Lost.Seconds(), t.Promoted.Seconds(), t.Reseeded.Seconds(), t.LoadEnd.Seconds()), nil
}

// OK reports whether something was acknowledged and nothing went wrong:
// nothing acknowledged lost, misplaced or duplicated, no seq reused, the
// log gapless, every window converged.
func (r *Result) OK() bool { return r.Acknowledged > 0 && len(r.Findings) == 0 }

// result judges the run against the new primary's log.
func (r *run) result(final map[string][]store.Entry, settled map[*writer]bool, conv map[*writer]time.Time, promoted time.Time) *Result {
	cfg := r.cfg
	res := &Result{Topology: string(cfg.Topology), SynchronousCommit: "on", Writers: cfg.Writers, SharedWriters: cfg.Shared,
		Pages: len(r.pages), Instances: cfg.Instances, Reseed: !cfg.NoReseed, Windows: len(r.writers), Gapless: true,
		PromotionToFirstWrite: -1, PromotionToConverged: -1}
	if cfg.Topology == pgprovider.TopologyAsyncStandby {
		res.SynchronousCommit = "on (no synchronous standby: local flush only)"
	}
	find := func(format string, args ...any) { res.Findings = append(res.Findings, fmt.Sprintf(format, args...)) }

	// Where the log puts each id, and what each slot holds.
	at := map[string][]slot{}
	holds := map[slot]string{}
	for _, p := range r.pages {
		for i, e := range final[p.id] {
			if e.Seq != int64(i+1) && res.Gapless {
				res.Gapless = false
				find("page %s: the log's seq %d is its entry %d (a gap)", short(p.id), e.Seq, i+1)
			}
			s := slot{p.id, e.Seq}
			at[e.Cmd.ID] = append(at[e.Cmd.ID], s)
			holds[s] = e.Cmd.ID
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	res.Attempts, res.FailedAttempts, res.DuplicateAnswers = r.attempts, len(r.failed), r.dupAnswers
	res.WritesFailed = outage(r.failed).Seconds()
	res.NoAckFor = longestGap(r.ackTimes, r.begin, r.loadEnd).Seconds()
	res.SlowestCommand = r.slowest.Seconds()
	res.Acknowledged = len(r.acks)
	var lost, misplaced, dups []string
	first := time.Time{}
	for id, a := range r.acks {
		if a.at.After(promoted) && (first.IsZero() || a.at.Before(first)) {
			first = a.at
		}
		where := at[id]
		switch {
		case len(where) == 0:
			res.Lost++
			lost = append(lost, fmt.Sprintf("%s (page %s seq %d)", short(id), short(a.page), a.seq))
		case !contains(where, slot{a.page, a.seq}):
			res.Misplaced++
			misplaced = append(misplaced, fmt.Sprintf("%s answered seq %d, in the log at %v", short(id), a.seq, where))
		default:
			res.Found++
		}
		if len(where) > 1 || len(r.ackSeqs[id]) > 1 {
			res.Duplicated++
			dups = append(dups, short(id))
		}
	}
	if !first.IsZero() {
		res.PromotionToFirstWrite = first.Sub(promoted).Seconds()
	}
	var reused []string
	for s, id := range r.seen {
		if holds[s] != id || r.reused[s] {
			res.SeqReused++
			reused = append(reused, fmt.Sprintf("page %s seq %d", short(s.page), s.seq))
		}
	}
	res.Rejected, res.Refused = len(r.rejected), len(r.refused)
	for _, w := range r.writers {
		res.Undecided += w.undecided
	}

	folds := map[string]kbcore.Doc{}
	for _, p := range r.pages {
		d, _ := kbcore.NewDoc(kbcore.Page{ID: p.id}, nil)
		for _, e := range final[p.id] {
			d = kbcore.Apply(d, e.Cmd).Doc
		}
		folds[p.id] = d
	}
	var stuck []string
	for _, w := range r.writers {
		seq, doc, pending := w.state()
		same := doc.Equal(folds[w.page.id])
		if settled[w] && same {
			res.Converged++
			continue
		}
		why := fmt.Sprintf("writer %d: page %s at seq %d, log head %d", w.idx, short(w.page.id), seq, lastSeq(final[w.page.id]))
		if pending > 0 {
			why += fmt.Sprintf(", %d pending", pending)
		}
		if !same {
			why += ", its document is not the fold of the log"
		}
		stuck = append(stuck, why)
	}
	if res.Converged == res.Windows && len(conv) == len(r.writers) {
		var last time.Time
		for _, t := range conv {
			if t.After(last) {
				last = t
			}
		}
		res.PromotionToConverged = last.Sub(promoted).Seconds()
	}

	if res.Acknowledged == 0 {
		find("no command was acknowledged")
	}
	if res.Lost > 0 {
		find("%d acknowledged commands are not in the new primary's log: %s", res.Lost, list(lost))
	}
	if res.Misplaced > 0 {
		find("%d acknowledged commands are in the log at another seq: %s", res.Misplaced, list(misplaced))
	}
	if res.Duplicated > 0 {
		find("%d ids committed twice or answered with two seqs: %s", res.Duplicated, list(dups))
	}
	if res.SeqReused > 0 {
		find("%d seqs that clients were given now hold another command (or none): %s", res.SeqReused, list(reused))
	}
	if res.Rejected > 0 {
		find("%d rejections of valid commands: %s", res.Rejected, list(r.rejected))
	}
	if res.Refused > 0 {
		find("%d answers neither a decision nor retryable: %s", res.Refused, list(r.refused))
	}
	if res.Undecided > 0 {
		find("%d commands still undecided %s after the load", res.Undecided, cfg.Settle)
	}
	if first.IsZero() {
		find("no command was acknowledged after the promotion")
	}
	if len(stuck) > 0 {
		find("%d of %d windows did not converge: %s", len(stuck), res.Windows, list(stuck))
	}
	return res
}

func contains(ss []slot, s slot) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// list joins the first few items, sorted, and says how many more.
func list(items []string) string {
	items = append([]string(nil), items...)
	sort.Strings(items)
	if len(items) > 5 {
		return strings.Join(items[:5], ", ") + fmt.Sprintf(", ... and %d more", len(items)-5)
	}
	return strings.Join(items, ", ")
}

// Text prints the result for people.
func Text(w io.Writer, r *Result) {
	secs := func(v float64) string {
		if v < 0 {
			return "never"
		}
		return fmt.Sprintf("%.3f s", v)
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	reseed := "a new standby seeded"
	if !r.Reseed {
		reseed = "no new standby"
	}
	fmt.Fprintf(w, "failover: %s (synchronous_commit=%s), %d instances, %d writers (%d on one shared page, %d on pages of their own)\n",
		r.Topology, r.SynchronousCommit, r.Instances, r.Writers, r.SharedWriters, r.Writers-r.SharedWriters)
	t := r.Timeline
	stall := "no replication stall"
	if t.Stalled > 0 {
		stall = fmt.Sprintf("replication stalled at %.2f s", t.Stalled.Seconds())
	}
	fmt.Fprintf(w, "timeline: %s, primary %s lost at %.2f s, standby %s promoted at %.2f s, %s",
		stall, r.LostPrimary, t.Lost.Seconds(), r.NewPrimary, t.Promoted.Seconds(), reseed)
	if t.Reseeded > 0 {
		fmt.Fprintf(w, " at %.2f s", t.Reseeded.Seconds())
	}
	fmt.Fprintf(w, ", load ended at %.2f s\n", t.LoadEnd.Seconds())
	rows := [][2]string{
		{"acknowledged", fmt.Sprint(r.Acknowledged)},
		{"found", fmt.Sprintf("%d (at the seq of their answer)", r.Found)},
		{"lost", fmt.Sprint(r.Lost)},
		{"misplaced", fmt.Sprint(r.Misplaced)},
		{"duplicated", fmt.Sprint(r.Duplicated)},
		{"seq reused", fmt.Sprint(r.SeqReused)},
		{"rejected", fmt.Sprint(r.Rejected)},
		{"gapless", fmt.Sprintf("%s (%d pages)", yes(r.Gapless), r.Pages)},
		{"converged", fmt.Sprintf("%d of %d windows", r.Converged, r.Windows)},
		{"write attempts", fmt.Sprintf("%d, %d failed (retried with the same id), %d retries answered duplicate: true", r.Attempts, r.FailedAttempts, r.DuplicateAnswers)},
		{"writes failed for", secs(r.WritesFailed)},
		{"no write acknowledged for", fmt.Sprintf("%s (longest gap between committed answers)", secs(r.NoAckFor))},
		{"slowest command", fmt.Sprintf("%s (issue to committed answer, retries included)", secs(r.SlowestCommand))},
		{"promotion -> first successful write", secs(r.PromotionToFirstWrite)},
		{"promotion -> every window converged", secs(r.PromotionToConverged)},
	}
	if sb := r.SplitBrain; sb != nil {
		fence := "on (store.OpenOptions.Fence)"
		if !sb.Fenced {
			fence = "OFF (--no-fence)"
		}
		rows = append(rows, [2]string{"split brain: fencing", fence},
			[2]string{"commits only the old primary holds", fmt.Sprint(sb.OldPrimaryOnly)},
			[2]string{"  of them told to clients", fmt.Sprint(sb.ToldClients)})
	}
	for _, row := range rows {
		fmt.Fprintf(w, "  %-37s %s\n", row[0], row[1])
	}
	if r.OK() {
		fmt.Fprintln(w, "PASS: nothing acknowledged was lost, duplicated or moved; no seq reused; every window converged")
		return
	}
	fmt.Fprintln(w, "FAIL:")
	for _, f := range r.Findings {
		fmt.Fprintln(w, "  - "+f)
	}
}
