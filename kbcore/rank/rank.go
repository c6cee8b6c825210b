package rank

import (
	"errors"
	"fmt"
	"slices"
)

// ErrInvalidKey is wrapped by errors about keys that are not valid order keys.
var ErrInvalidKey = errors.New("rank: invalid order key")

// ErrOrder is wrapped by errors reporting that the lower bound is not
// strictly less than the upper bound.
var ErrOrder = errors.New("rank: a must be less than b")

// maxN is the largest n that NBetween accepts.
const maxN = 1_000_000

const (
	digits    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	base      = len(digits)
	zeroDigit = '0'
	lastDigit = 'z'
)

// smallestInteger is "A" followed by 26 zeros. Upstream refuses it as a key
// because nothing could ever be placed before it.
const smallestInteger = "A00000000000000000000000000"

// digitValue maps a byte to its base-62 value, or -1 if it is not a digit.
var digitValue = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < base; i++ {
		t[digits[i]] = int8(i)
	}
	return t
}()

// intLen returns the length of the integer part introduced by head, or 0 if
// head is not a valid head character.
func intLen(head byte) int {
	switch {
	case head >= 'a' && head <= 'z':
		return int(head-'a') + 2
	case head >= 'A' && head <= 'Z':
		return int('Z'-head) + 2
	}
	return 0
}

// Valid reports whether key is a well-formed order key: every byte is a
// base-62 digit, the head is a letter and the key is at least as long as the
// integer part it announces, a non-empty fraction does not end in '0', and
// the key is not the smallest integer "A" + 26 zeros.
func Valid(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		if digitValue[key[i]] < 0 {
			return false
		}
	}
	n := intLen(key[0])
	if n == 0 || n > len(key) {
		return false
	}
	if len(key) > n && key[len(key)-1] == zeroDigit {
		return false
	}
	return key != smallestInteger
}

func invalid(key string) error {
	return fmt.Errorf("%w: %q", ErrInvalidKey, key)
}

func orderErr(a, b string) error {
	return fmt.Errorf("%w: %q >= %q", ErrOrder, a, b)
}

// split returns the integer part and fraction of a key already checked by
// Valid.
func split(key string) (integer, fraction string) {
	n := intLen(key[0])
	return key[:n], key[n:]
}

// Between returns a key strictly between a and b. An empty a or b stands
// for an open end. It fails with ErrInvalidKey if a or b is not Valid and
// with ErrOrder if a >= b.
func Between(a, b string) (string, error) {
	if a != "" && !Valid(a) {
		return "", invalid(a)
	}
	if b != "" && !Valid(b) {
		return "", invalid(b)
	}
	if a != "" && b != "" && a >= b {
		return "", orderErr(a, b)
	}
	return between(a, b)
}

// between implements Between for validated, ordered bounds.
func between(a, b string) (string, error) {
	switch {
	case a == "" && b == "":
		return "a0", nil

	case a == "":
		ib, fb := split(b)
		if ib == smallestInteger {
			return ib + midpoint("", fb, false), nil
		}
		if fb != "" {
			return ib, nil
		}
		d, ok := decrement(ib)
		if !ok {
			return "", fmt.Errorf("rank: no key before %q", b)
		}
		if d == smallestInteger {
			// Upstream returns "A" + 26 zeros here, a key it then rejects
			// as input. Return the valid key just above it instead.
			return d + midpoint("", "", true), nil
		}
		return d, nil

	case b == "":
		ia, fa := split(a)
		if inc, ok := increment(ia); ok {
			return inc, nil
		}
		return ia + midpoint(fa, "", true), nil
	}

	ia, fa := split(a)
	ib, fb := split(b)
	if ia == ib {
		return ia + midpoint(fa, fb, false), nil
	}
	inc, ok := increment(ia)
	if !ok {
		return "", fmt.Errorf("rank: no key after %q", a)
	}
	if inc < b {
		return inc, nil
	}
	return ia + midpoint(fa, "", true), nil
}

// midpoint returns a fraction strictly between fractions a and b, where
// bOpen means b is unbounded; a missing digit reads as '0'.
//
// a and b must be fractions of Valid keys: base-62 digit strings without a
// trailing '0'. Unless bOpen, a must be less than b; if bOpen, b must be "".
// midpoint does not check this; its only caller, between, runs on bounds
// Between has validated and ordered (TestErrors holds that Between refuses
// a bound with a non-digit or a trailing '0' in its fraction, and a >= b).
// between passes bOpen false only with b the fraction of its upper bound:
// with a == "" and b non-empty (b's integer part is "A" + 26 zeros and b is
// not that integer), or with a and b from bounds in one integer part, where
// a < b as keys gives a < b as fractions.
func midpoint(a, b string, bOpen bool) string {
	var out []byte
	if !bOpen {
		// Copy the common prefix, padding a with zeros. As a < b and b
		// does not end in '0', the loop stops before the end of b, at a
		// digit of b above a's (or above '0' once a is used up).
		n := 0
		for n < len(b) && digitOr0(a, n) == b[n] {
			n++
		}
		out = append(out, b[:n]...)
		if n >= len(a) {
			a = ""
		} else {
			a = a[n:]
		}
		b = b[n:]
	}
	for {
		da := 0
		if a != "" {
			da = int(digitValue[a[0]])
		}
		db := base
		if !bOpen {
			db = int(digitValue[b[0]])
		}
		if db-da > 1 {
			// Math.round(0.5*(da+db)) upstream: round half up.
			return string(append(out, digits[(da+db+1)/2]))
		}
		if !bOpen && len(b) > 1 {
			return string(append(out, b[0]))
		}
		out = append(out, digits[da])
		if a != "" {
			a = a[1:]
		}
		b, bOpen = "", true
	}
}

func digitOr0(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return zeroDigit
}

// increment returns the integer part following x, or false if x is the
// largest one. x must be a valid integer part (the integer part of a Valid
// key, as split returns it); increment does not check this. Its only caller,
// between, runs on bounds Between has validated (TestValid and TestErrors
// hold that a key shorter than its head announces or with a non-digit is
// refused).
func increment(x string) (string, bool) {
	head := x[0]
	digs := []byte(x[1:])
	for i := len(digs) - 1; i >= 0; i-- {
		d := digitValue[digs[i]]
		if int(d)+1 < base {
			digs[i] = digits[d+1]
			return string(head) + string(digs), true
		}
		digs[i] = zeroDigit
	}
	// Carry out of the top digit: change the head (and the length).
	switch head {
	case 'Z':
		return "a0", true
	case 'z':
		return "", false
	}
	head++
	if head > 'a' {
		digs = append(digs, zeroDigit)
	} else {
		digs = digs[:len(digs)-1]
	}
	return string(head) + string(digs), true
}

// decrement returns the integer part preceding x, or false if x is the
// smallest one. x must be a valid integer part (the integer part of a Valid
// key, as split returns it); decrement does not check this. Its only caller,
// between, runs on bounds Between has validated (TestValid and TestErrors
// hold that a key shorter than its head announces or with a non-digit is
// refused).
func decrement(x string) (string, bool) {
	head := x[0]
	digs := []byte(x[1:])
	for i := len(digs) - 1; i >= 0; i-- {
		d := digitValue[digs[i]]
		if d > 0 {
			digs[i] = digits[d-1]
			return string(head) + string(digs), true
		}
		digs[i] = lastDigit
	}
	// Borrow out of the top digit: change the head (and the length).
	switch head {
	case 'a':
		return "Zz", true
	case 'A':
		return "", false
	}
	head--
	if head < 'Z' {
		digs = append(digs, lastDigit)
	} else {
		digs = digs[:len(digs)-1]
	}
	return string(head) + string(digs), true
}

// NBetween returns n keys in increasing order, all strictly between a and b
// (empty meaning an open end), laid out like upstream generateNKeysBetween.
// n <= 0 yields nil and a nil error; n == 1 yields the result of Between;
// n > 1,000,000 is rejected with an error.
func NBetween(a, b string, n int) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	if n > maxN {
		return nil, fmt.Errorf("rank: n = %d exceeds the limit of %d keys", n, maxN)
	}
	if n == 1 {
		k, err := Between(a, b)
		if err != nil {
			return nil, err
		}
		return []string{k}, nil
	}
	out := make([]string, n)
	switch {
	case b == "":
		c := a
		for i := range out {
			k, err := Between(c, "")
			if err != nil {
				return nil, err
			}
			out[i], c = k, k
		}
	case a == "":
		c := b
		for i := range out {
			k, err := Between("", c)
			if err != nil {
				return nil, err
			}
			out[i], c = k, k
		}
		slices.Reverse(out)
	default:
		if err := fill(a, b, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fill writes len(out) keys between the bounded a and b into out, splitting
// at the middle like upstream so the results are identical.
func fill(a, b string, out []string) error {
	if len(out) == 0 {
		return nil
	}
	c, err := Between(a, b)
	if err != nil {
		return err
	}
	mid := len(out) / 2
	out[mid] = c
	if err := fill(a, c, out[:mid]); err != nil {
		return err
	}
	return fill(c, b, out[mid+1:])
}
