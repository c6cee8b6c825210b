//go:build linux

package findmax

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// readMachine reads the machine's CPU time from /proc/stat: every core's
// busy time (user, nice, system, irq, softirq), the time a hypervisor gave
// other guests (steal), and the number of cores.
func readMachine() (machineSample, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return machineSample{}, false
	}
	defer f.Close()
	var m machineSample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu") {
			continue
		}
		if fields[0] != "cpu" {
			m.cores++
			continue
		}
		var v [8]float64
		for i := 1; i < len(fields) && i <= len(v); i++ {
			v[i-1], _ = strconv.ParseFloat(fields[i], 64)
		}
		// user nice system idle iowait irq softirq steal
		m.busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / clockTicks
		m.steal = v[7] / clockTicks
		m.ok = true
	}
	return m, m.ok && m.cores > 0
}
