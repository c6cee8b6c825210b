// Package store is kbkit's Postgres store: the schema, the command
// transaction (lock, dedup, plan, apply, write changed rows, log, notify),
// page snapshots and log reads, and devices.
//
//	st, err := store.Open(ctx, dsn) // migrates
//	dev, err := st.PairDevice(ctx, "acme")
//	out, err := st.Submit(ctx, dev, env)
//	switch {
//	case err != nil: // transient or internal: retry with the same id
//	case out.Rejected != nil: // a decision: logged, the same on every retry
//	default: // committed at out.Seq
//	}
package store
