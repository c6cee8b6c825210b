package adapter

import (
	"errors"
	"strings"
)

// SplitCommand splits a command line the way a POSIX shell splits words,
// without expansions: white space separates words; 'single quotes' keep
// everything literally; "double quotes" keep everything but \" \\ \$ \`;
// a backslash outside quotes makes the next character literal.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	const (
		plain = iota
		single
		double
	)
	state := plain
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch state {
		case single:
			if r == '\'' {
				state = plain
			} else {
				cur.WriteRune(r)
			}
		case double:
			switch {
			case r == '"':
				state = plain
			case r == '\\' && i+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[i+1]):
				i++
				cur.WriteRune(rs[i])
			case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
				i++
			default:
				cur.WriteRune(r)
			}
		default:
			switch {
			case r == ' ' || r == '\t' || r == '\n' || r == '\r':
				if inWord {
					words = append(words, cur.String())
					cur.Reset()
					inWord = false
				}
			case r == '\'':
				state, inWord = single, true
			case r == '"':
				state, inWord = double, true
			case r == '\\':
				if i+1 >= len(rs) {
					return nil, errors.New("adapter: command ends with a backslash")
				}
				i++
				if rs[i] != '\n' {
					cur.WriteRune(rs[i])
					inWord = true
				}
			default:
				cur.WriteRune(r)
				inWord = true
			}
		}
	}
	if state != plain {
		return nil, errors.New("adapter: unterminated quote in command")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("adapter: empty command")
	}
	return words, nil
}
