// Package adapters holds the adapters kbkit ships in languages other than
// Go (each in its own directory, with its expectations file) and embeds the
// JSON Schema of expectations files.
package adapters
