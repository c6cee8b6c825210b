package rank

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

type vector struct {
	Fn        string          `json:"fn"`
	A         *string         `json:"a"`
	B         *string         `json:"b"`
	N         *int            `json:"n"`
	Expect    json.RawMessage `json:"expect"`
	JSMessage string          `json:"js_message"`
	Note      string          `json:"note"`
	Source    string          `json:"source"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	data, err := os.ReadFile("../../testdata/vectors/fractional-indexing.json")
	if err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	var vs []vector
	if err := json.Unmarshal(data, &vs); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	return vs
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestVectors(t *testing.T) {
	for i, v := range loadVectors(t) {
		a, b := deref(v.A), deref(v.B)
		where := func() string {
			src := v.Source
			if src == "" {
				src = "(no source)"
			}
			return src
		}

		var wantErr bool
		var wantStr string
		var wantList []string
		if err := json.Unmarshal(v.Expect, &wantStr); err == nil {
			wantErr = wantStr == "error"
		} else if err := json.Unmarshal(v.Expect, &wantList); err != nil {
			t.Errorf("row %d [%s]: bad expect %s", i, where(), v.Expect)
			continue
		}

		switch v.Fn {
		case "generateKeyBetween":
			got, err := Between(a, b)
			switch {
			case wantErr:
				if err == nil {
					t.Errorf("row %d [%s]: Between(%q, %q) = %q, want error (%s)", i, where(), a, b, got, v.JSMessage)
				} else if !errors.Is(err, ErrInvalidKey) && !errors.Is(err, ErrOrder) {
					t.Errorf("row %d [%s]: Between(%q, %q) error %v wraps neither ErrInvalidKey nor ErrOrder", i, where(), a, b, err)
				}
			case err != nil:
				t.Errorf("row %d [%s]: Between(%q, %q) error %v, want %q", i, where(), a, b, err, wantStr)
			case got != wantStr:
				t.Errorf("row %d [%s]: Between(%q, %q) = %q, want %q", i, where(), a, b, got, wantStr)
			}
		case "generateNKeysBetween":
			if v.N == nil {
				t.Errorf("row %d [%s]: missing n", i, where())
				continue
			}
			got, err := NBetween(a, b, *v.N)
			switch {
			case wantErr:
				if err == nil {
					t.Errorf("row %d [%s]: NBetween(%q, %q, %d) = %q, want error (%s)", i, where(), a, b, *v.N, got, v.JSMessage)
				}
			case err != nil:
				t.Errorf("row %d [%s]: NBetween(%q, %q, %d) error %v, want %q", i, where(), a, b, *v.N, err, wantList)
			case !slices.Equal(got, wantList):
				t.Errorf("row %d [%s]: NBetween(%q, %q, %d) = %q, want %q", i, where(), a, b, *v.N, got, wantList)
			}
		default:
			t.Errorf("row %d [%s]: unknown fn %q", i, where(), v.Fn)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		a, b string
		want error
	}{
		{"a1", "a0", ErrOrder},
		{"a0", "a0", ErrOrder},
		{"a0", "a0V", nil},
		{"a00", "", ErrInvalidKey},
		{"", "a00", ErrInvalidKey},
		// midpoint relies on these: neither bound's fraction may end in
		// '0' or hold a non-digit, also with both bounds in one integer.
		{"a00", "a1", ErrInvalidKey},
		{"a0", "a0V0", ErrInvalidKey},
		{"a0", "a0V-", ErrInvalidKey},
		{"a\xff", "", ErrInvalidKey},
		{"a0\xff", "", ErrInvalidKey},
		{"é0", "", ErrInvalidKey},
		{"a0-", "", ErrInvalidKey},
		{"0", "1", ErrInvalidKey},
		{"", smallestInteger, ErrInvalidKey},
		{"b0", "", ErrInvalidKey},
		{"b0!", "", ErrInvalidKey},
	}
	for _, c := range cases {
		_, err := Between(c.a, c.b)
		if c.want == nil {
			if err != nil {
				t.Errorf("Between(%q, %q): unexpected error %v", c.a, c.b, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("Between(%q, %q) error = %v, want %v", c.a, c.b, err, c.want)
		}
		for _, n := range []int{1, 5} {
			if _, err := NBetween(c.a, c.b, n); !errors.Is(err, c.want) {
				t.Errorf("NBetween(%q, %q, %d) error = %v, want %v", c.a, c.b, n, err, c.want)
			}
		}
	}
	if !strings.Contains(invalid("a00").Error(), `"a00"`) {
		t.Errorf("invalid key error does not mention the key: %v", invalid("a00"))
	}
}

// TestBelowSmallestInteger covers a divergence from upstream: the key
// before the integer "A" + 25 zeros + "1" would be "A" + 26 zeros, which is
// not a valid key, so Between returns "A" + 26 zeros + "V" instead.
func TestBelowSmallestInteger(t *testing.T) {
	b := "A00000000000000000000000001"
	got, err := Between("", b)
	if want := smallestInteger + "V"; err != nil || got != want {
		t.Fatalf("Between(\"\", %q) = %q, %v; want %q", b, got, err, want)
	}
	keys, err := NBetween("", b, 50)
	if err != nil {
		t.Fatal(err)
	}
	checkSorted(t, "", b, keys)
}

func TestNBetweenLimits(t *testing.T) {
	for _, n := range []int{0, -1, -1 << 62} {
		// No keys is a nil slice, as documented, for n = 0 too.
		got, err := NBetween("", "", n)
		if err != nil || got != nil {
			t.Errorf("NBetween(n=%d) = %#v, %v; want nil, nil", n, got, err)
		}
	}
	for _, n := range []int{maxN + 1, 1 << 62} {
		if _, err := NBetween("a0", "a1", n); err == nil {
			t.Errorf("NBetween(n=%d): want error", n)
		}
	}
	got, err := NBetween("", "", 1)
	if err != nil || !slices.Equal(got, []string{"a0"}) {
		t.Errorf("NBetween(n=1) = %v, %v", got, err)
	}
}

func TestValid(t *testing.T) {
	valid := []string{"a0", "Zz", "a0V", "A000000000000000000000000000V", "A00000000000000000000000001",
		"zzzzzzzzzzzzzzzzzzzzzzzzzzz", "zzzzzzzzzzzzzzzzzzzzzzzzzzzV", "b00", "Y00"}
	invalidKeys := []string{"", "a", "0", "a00", "a0V0", "b1", smallestInteger, "a0\x00", "a0é",
		"\xff", "a0 ", "Z", "A0000000000000000000000000"}
	for _, k := range valid {
		if !Valid(k) {
			t.Errorf("Valid(%q) = false", k)
		}
	}
	for _, k := range invalidKeys {
		if Valid(k) {
			t.Errorf("Valid(%q) = true", k)
		}
	}
}

// TestLongChains walks far in both directions and checks ordering and
// validity, crossing head changes (z..., A...).
func TestLongChains(t *testing.T) {
	keys, err := NBetween("zzzzzzzzzzzzzzzzzzzzzzzzzzx", "", 200)
	if err != nil {
		t.Fatal(err)
	}
	checkSorted(t, "zzzzzzzzzzzzzzzzzzzzzzzzzzx", "", keys)
	keys, err = NBetween("", "A000000000000000000000000002", 200)
	if err != nil {
		t.Fatal(err)
	}
	checkSorted(t, "", "A000000000000000000000000002", keys)
	keys, err = NBetween("a0", "a1", 5000)
	if err != nil {
		t.Fatal(err)
	}
	checkSorted(t, "a0", "a1", keys)
}

type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func checkSorted(t fataler, a, b string, keys []string) {
	t.Helper()
	prev := a
	for i, k := range keys {
		if !Valid(k) {
			t.Fatalf("key %d %q is invalid", i, k)
		}
		if prev != "" && k <= prev {
			t.Fatalf("key %d %q is not above %q", i, k, prev)
		}
		prev = k
	}
	if b != "" && prev >= b {
		t.Fatalf("last key %q is not below %q", prev, b)
	}
}

// genKey draws a random valid key.
func genKey() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		for {
			heads := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			// Favour short integer parts so nearby keys collide often, and the
			// extreme heads.
			var head byte
			if rapid.Bool().Draw(t, "shortHead") {
				head = rapid.SampledFrom([]byte("abcYZAz")).Draw(t, "head")
			} else {
				head = heads[rapid.IntRange(0, len(heads)-1).Draw(t, "headIdx")]
			}
			// Small alphabets sometimes, to provoke shared prefixes and
			// integers at the extremes (all zeros, all 'z').
			alphabet := rapid.SampledFrom([]string{digits, digits, "01yzVU", "01", "yz", "0", "z"}).Draw(t, "alphabet")
			digit := func(label string) byte {
				return alphabet[rapid.IntRange(0, len(alphabet)-1).Draw(t, label)]
			}
			var sb strings.Builder
			sb.WriteByte(head)
			// Sometimes make the integer all '0' or all 'z' except for its
			// last digit, to reach the ends of the integer range.
			fill := rapid.SampledFrom([]byte{0, 0, '0', 'z'}).Draw(t, "fill")
			for i := 1; i < intLen(head); i++ {
				if fill != 0 && i < intLen(head)-1 {
					sb.WriteByte(fill)
				} else {
					sb.WriteByte(digit("int"))
				}
			}
			fl := rapid.IntRange(0, 6).Draw(t, "fracLen")
			for i := 0; i < fl; i++ {
				d := digit("frac")
				if i == fl-1 && d == '0' {
					d = '1'
				}
				sb.WriteByte(d)
			}
			if k := sb.String(); Valid(k) {
				return k
			}
		}
	})
}

func TestPropertyBetween(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var a, b string
		switch rapid.IntRange(0, 4).Draw(t, "open") {
		case 0: // open below
			b = genKey().Draw(t, "b")
		case 1: // open above
			a = genKey().Draw(t, "a")
		case 2: // both open
		default:
			a = genKey().Draw(t, "a")
			b = genKey().Draw(t, "b")
			if a == b {
				t.Skip("equal")
			}
			if a > b {
				a, b = b, a
			}
		}
		k, err := Between(a, b)
		if err != nil {
			t.Fatalf("Between(%q, %q): %v", a, b, err)
		}
		if !Valid(k) || (a != "" && k <= a) || (b != "" && k >= b) {
			t.Fatalf("Between(%q, %q) = %q: not valid or not strictly between", a, b, k)
		}
		n := rapid.IntRange(0, 40).Draw(t, "n")
		keys, err := NBetween(a, b, n)
		if err != nil {
			t.Fatalf("NBetween(%q, %q, %d): %v", a, b, n, err)
		}
		if len(keys) != n {
			t.Fatalf("NBetween(%q, %q, %d) returned %d keys", a, b, n, len(keys))
		}
		checkSorted(t, a, b, keys)
		// Reversed bounds are rejected, never swapped.
		if a != "" && b != "" {
			if _, err := Between(b, a); !errors.Is(err, ErrOrder) {
				t.Fatalf("Between(%q, %q) error = %v, want ErrOrder", b, a, err)
			}
		}
	})
}

func FuzzBetween(f *testing.F) {
	seeds := [][2]string{
		{"", ""}, {"a0", ""}, {"", "a0"}, {"a0", "a1"}, {"a1", "a0"}, {"a0", "a0"},
		{"Zz", "a0"}, {"a0", "a0V"}, {"az", "b00"}, {"b125", "b129"}, {"a0", "a01"},
		{"", "A000000000000000000000000001"}, {"", smallestInteger}, {"", "A00000000000000000000000000V"}, {"", "A00000000000000000000000001"},
		{"zzzzzzzzzzzzzzzzzzzzzzzzzzz", ""}, {"a00", ""}, {"a", ""}, {"0", "1"},
		{"a0\xff", ""}, {"é", "ü"}, {"a0zz", "a1"}, {"aV", "aV0V"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		k, err := Between(a, b)
		okInputs := (a == "" || Valid(a)) && (b == "" || Valid(b)) && (a == "" || b == "" || a < b)
		if okInputs && err != nil {
			t.Fatalf("Between(%q, %q): unexpected error %v", a, b, err)
		}
		if !okInputs && err == nil {
			t.Fatalf("Between(%q, %q) = %q: expected an error", a, b, k)
		}
		if err == nil {
			if !Valid(k) || (a != "" && k <= a) || (b != "" && k >= b) {
				t.Fatalf("Between(%q, %q) = %q: not valid or not strictly between", a, b, k)
			}
		}
		keys, err := NBetween(a, b, 4)
		if okInputs != (err == nil) {
			t.Fatalf("NBetween(%q, %q, 4): error %v, inputs ok %v", a, b, err, okInputs)
		}
		if err == nil {
			if len(keys) != 4 {
				t.Fatalf("NBetween(%q, %q, 4) returned %d keys", a, b, len(keys))
			}
			checkSorted(t, a, b, keys)
		}
	})
}

func BenchmarkBetween(b *testing.B) {
	pairs := [][2]string{{"a0", "a1"}, {"a0", ""}, {"", "a0"}, {"a0zzzzz", "a1"}, {"b125", "b129"}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := pairs[i%len(pairs)]
		if _, err := Between(p[0], p[1]); err != nil {
			b.Fatal(err)
		}
	}
}

// NBetween at the largest n it allows (spec/README.md 3): every key valid,
// strictly increasing, strictly between the bounds; one more is an error.
func TestNBetweenLargestN(t *testing.T) {
	for _, b := range [][2]string{{"", ""}, {"a0", "a001"}} {
		keys, err := NBetween(b[0], b[1], maxN)
		if err != nil || len(keys) != maxN {
			t.Fatalf("NBetween(%q, %q, %d): %d keys, %v", b[0], b[1], maxN, len(keys), err)
		}
		prev := b[0]
		for i, k := range keys {
			if !Valid(k) || k <= prev {
				t.Fatalf("key %d %q after %q", i, k, prev)
			}
			prev = k
		}
		if b[1] != "" && prev >= b[1] {
			t.Fatalf("last key %q not below %q", prev, b[1])
		}
		if _, err := NBetween(b[0], b[1], maxN+1); err == nil {
			t.Errorf("NBetween(%q, %q, %d) is not an error", b[0], b[1], maxN+1)
		}
	}
}

// TestMidpointTwoApart pins midpoint's rounding when the digits of a and b
// are two apart: the digit between them, not b's first digit or a longer
// fraction. No vector holds such a pair.
func TestMidpointTwoApart(t *testing.T) {
	last := "z" + strings.Repeat("z", 26)
	cases := []struct{ a, b, want string }{
		{"a0", "a02", "a01"},
		{"a0", "a02V", "a01"},
		{last + "y", "", last + "z"},
	}
	for _, c := range cases {
		if got, err := Between(c.a, c.b); err != nil || got != c.want {
			t.Errorf("Between(%q, %q) = %q, %v; want %q", c.a, c.b, got, err, c.want)
		}
	}
}
