// Package syncio serialises writes that several goroutines make to one
// writer (an adapter's forwarded stderr beside the command's own lines).
package syncio
