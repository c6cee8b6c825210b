// Package rank implements fractional-indexing order keys ("ranks") that are
// byte-compatible with the npm package fractional-indexing by rocicorp.
//
// A key is an integer part followed by an optional fraction. Both are
// written in base 62 using the digits "0-9A-Za-z". The first character of
// the integer part (its head) encodes how many digits follow: 'a' means one
// digit, 'b' two, ... 'z' 26; 'Z' means one digit, 'Y' two, ... 'A' 26, for
// the negative integers. The fraction never ends in '0'. Keys compare with
// plain byte-wise string comparison, so they can be stored in any column
// or index that sorts strings.
//
// The empty string stands for an open end: Between("", "") returns the
// first key "a0", Between(k, "") returns a key after k and Between("", k) a
// key before k.
//
// Usage:
//
//	first, _ := rank.Between("", "")        // "a0"
//	next, _ := rank.Between(first, "")      // "a1"
//	mid, _ := rank.Between(first, next)     // "a0V"
//	keys, _ := rank.NBetween(first, next, 3) // ["a0G" "a0V" "a0l"]
//	if !rank.Valid(userInput) {
//		// reject it
//	}
//
// All functions are pure and never panic. Invalid keys are reported with an
// error wrapping ErrInvalidKey, and bounds that are not strictly increasing
// with an error wrapping ErrOrder; the bounds are never swapped.
package rank
