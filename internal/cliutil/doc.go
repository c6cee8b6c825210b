// Package cliutil holds what the subcommands of the kbkit command line
// share, wherever their package is: the exit statuses and the error that
// carries one out of a cobra command, the opening of a report file ("-" is
// stdout), and the wording of a run that could not start.
package cliutil
