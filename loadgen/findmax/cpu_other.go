//go:build !linux

package findmax

// readMachine: the machine's CPU is read on Linux only.
func readMachine() (machineSample, bool) { return machineSample{}, false }
