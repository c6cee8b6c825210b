package sim

import "fmt"

// counted is what a seed's faults did, for its report beside the drawn
// rates: a rate of 0 can still count events (a response the rejection
// race loses on purpose, a cut by a restart), and a small rate can count
// none.
func (st Stats) counted() string {
	lost := fmt.Sprint(st.LostResp)
	if st.ForcedLost > 0 {
		lost = fmt.Sprintf("%d (%d forced by the rejection race)", st.LostResp, st.ForcedLost)
	}
	return fmt.Sprintf("; counted: dropped %d, duplicated %d, reordered %d, cuts %d, lost responses %s, restarts %d",
		st.Dropped, st.Duplicated, st.Reordered, st.Cuts, lost, st.Restarts)
}
