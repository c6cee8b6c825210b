// Package cliutil holds what the subcommands of the kbkit command line
// share, wherever their package is: the exit statuses and the error that
// carries one out of a cobra command, the opening of a report file ("-" is
// stdout), the wording of a run that could not start, and Strict: a
// command tree that refuses unknown subcommands and flags (exit 2).
package cliutil
