// Package timeline renders one simulated seed as a self-contained HTML
// page: a lane per window, per server instance, for the database and per
// page log; every command as a span from its first POST to its decision;
// echoes, refetches, snapshots, undo/redo links and injected faults where
// they happened; each checker finding linked to the events it is about;
// and the final documents of the windows beside the fold of the log.
//
// The simulator (package sim) fills a Timeline while a seed runs;
// this package knows nothing of servers, so it is tested on plain values.
//
//	tl := &timeline.Timeline{Title: "seed 7"}
//	w0 := tl.AddLane(timeline.Lane{ID: "w0", Label: "w0", Kind: timeline.LaneWindow})
//	tl.Add(timeline.Event{Lane: w0, Kind: timeline.KindEcho, At: 1e6, Seq: 4})
//	tl.AddFinding("convergence", "window 0 (page ab12cd34, seq 4) renders ...")
//	timeline.HTML(f, tl)
package timeline
