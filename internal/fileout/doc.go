// Package fileout writes a command's output files: whole or not at all.
package fileout
