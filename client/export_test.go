package client

// DocComparisonsInStep is how many times windows in step with their
// page's others compared whole documents to take another's
// (docComparisonsInStep).
func DocComparisonsInStep() int64 { return docComparisonsInStep.Load() }

// EventBuffer is the capacity of the events channel of w's subscription.
func EventBuffer(w *Window) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return cap(w.sub.events)
}

// DropEvents makes w lose the events drop returns true for, as a stream
// that lost them would (drop runs under the window's lock).
func DropEvents(w *Window, drop func(Event) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropEvent = drop
}

// BeforePage makes f run in each refetch of w after its kb.page request
// took the pending ids and before it is sent.
func BeforePage(w *Window, f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.beforePage = f
}
