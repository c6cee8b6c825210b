package sim

import "time"

// hang bounds the waits of tests whose implementations are correct (the
// reference server, the example client without a bug): an echo, an
// answer of a client adapter. These waits end on the event; the bound
// only turns a hang into a failure. A machine busy with other work (a CI
// runner, a laptop during a build) stretches them far beyond what a quiet
// one takes, so it is generous. Tests that expect a wait to run out (a
// broken server, a client that stops answering) keep short ones.
const hang = time.Minute
