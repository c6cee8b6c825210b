package client

// DocComparisonsInStep is how many times windows in step with their
// page's others compared whole documents to take another's
// (docComparisonsInStep).
func DocComparisonsInStep() int64 { return docComparisonsInStep.Load() }
