package kbcore

// MaxIDLen is the longest node id the document model accepts.
const MaxIDLen = 64

// ValidID reports whether s is a node id: 1-64 characters of [A-Za-z0-9_-].
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidCell reports whether s names a table cell: 1-3 upper-case column
// letters then a row number from 1 to 999999 without leading zeros ("B2").
func ValidCell(s string) bool {
	i := 0
	for i < len(s) && s[i] >= 'A' && s[i] <= 'Z' {
		i++
	}
	if i == 0 || i > 3 || i == len(s) || s[i] == '0' || len(s)-i > 6 {
		return false
	}
	for j := i; j < len(s); j++ {
		if s[j] < '0' || s[j] > '9' {
			return false
		}
	}
	return true
}
