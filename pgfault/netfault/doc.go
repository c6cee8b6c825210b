// Package netfault puts a fault layer between kbkit's server instances
// and Postgres: a real TCP proxy on loopback (Shopify's toxiproxy, used as
// a library) whose link can be cut (packets dropped, not refused), slowed,
// throttled, reset or made to flap.
//
//	link, err := netfault.Listen("127.0.0.1:5432")
//	defer link.Close()
//	dsn, _ := netfault.ThroughLink(dsn, link)  // the servers dial the proxy
//	link.Apply(netfault.Blackhole)              // the partition begins
//	link.Heal()                                 // and ends
package netfault
