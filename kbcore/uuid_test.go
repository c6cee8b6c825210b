package kbcore

import (
	"testing"

	guuid "github.com/google/uuid"
	"pgregory.net/rapid"
)

// kbcore's own version-5 UUIDs and its reading of an origin id agree with
// github.com/google/uuid (which it used before) on every input: derived
// and implicit page ids are part of the spec, so not one may change.
func TestUUIDAgreesWithGoogleUUID(t *testing.T) {
	hexc := rapid.SampledFrom([]byte("0123456789abcdefABCDEF-{}:urnidxg"))
	rapid.Check(t, func(t *rapid.T) {
		var s string
		switch rapid.IntRange(0, 3).Draw(t, "form") {
		case 0: // a real uuid, in one of its forms
			u := guuid.UUID(bytes16(t, "bytes"))
			forms := []string{u.String(), u.URN(), "{" + u.String() + "}", u.String()[:8] + u.String()[9:13] + u.String()[14:18] + u.String()[19:23] + u.String()[24:]}
			s = forms[rapid.IntRange(0, len(forms)-1).Draw(t, "which")]
			if rapid.Bool().Draw(t, "upper") {
				b := []byte(s)
				for i := range b {
					if b[i] >= 'a' && b[i] <= 'z' {
						b[i] -= 32
					}
				}
				s = string(b)
			}
		case 1: // the lengths the parser switches on, in likely characters
			n := rapid.SampledFrom([]int{32, 36, 38, 45}).Draw(t, "len")
			s = string(rapid.SliceOfN(hexc, n, n).Draw(t, "chars"))
		default:
			s = rapid.String().Draw(t, "any")
		}
		want, err := guuid.Parse(s)
		got, ok := parseUUID(s)
		if ok != (err == nil) || (ok && got != uuid(want)) {
			t.Fatalf("parseUUID(%q) = %v, %v; google/uuid: %v, %v", s, got, ok, want, err)
		}
		name := []byte(rapid.String().Draw(t, "name"))
		ns := uuid(bytes16(t, "ns"))
		if g, w := uuidSHA1(ns, name).String(), guuid.NewSHA1(guuid.UUID(ns), name).String(); g != w {
			t.Fatalf("uuidSHA1(%v, %q) = %s, google/uuid %s", ns, name, g, w)
		}
	})
}

// The implicit-page namespace is the spec's.
func TestImplicitPageNamespace(t *testing.T) {
	if got := implicitPageNamespace.String(); got != "ad3e1dfe-7b0d-4755-8128-04d73044a43c" {
		t.Fatalf("namespace %s", got)
	}
}

func bytes16(t *rapid.T, label string) [16]byte {
	var a [16]byte
	copy(a[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label))
	return a
}
