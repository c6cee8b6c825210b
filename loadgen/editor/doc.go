// Package editor is kbkit's measured editor: the window of kbkit's load
// drivers (kbkit loadgen and the k6 extension k6/x/kbkit), measuring what
// its user would see. A Window is a client.Window (spec/window.md: the
// command applied locally, sent, sent again with the same id until the
// server decides it) that records each command's outcome and commit
// latency, and each event's echo latency (at the window that issued the
// command) and fan-out latency (at the page's other windows here), into
// a metrics.Recorder, and hands every sample to the driver's Tap (k6
// turns them into its own samples). A Session is what the windows of one
// process share: their pages with the highest seq seen, the stamps of the
// commands in flight, and the pages' titles.
package editor
