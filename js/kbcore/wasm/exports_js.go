//go:build js

package main

import "syscall/js"

// The GOOS=js build, for comparison only (make wasm-compare): the same
// calls through syscall/js, globalThis.__kbcore(op, a, b, s0, s1, s2, s3)
// answering [status, text] with status 0 (JSON) or 1 (an error's text).
func main() {
	sess := newSession()
	js.Global().Set("__kbcore", js.FuncOf(func(_ js.Value, v []js.Value) any {
		var args [4][]byte
		for i := range args {
			if 3+i < len(v) && v[3+i].Type() == js.TypeString {
				args[i] = []byte(v[3+i].String())
			}
		}
		res, err := sess.call(v[0].Int(), [2]int64{int64(v[1].Float()), int64(v[2].Float())}, args)
		if err != nil {
			return []any{1, err.Error()}
		}
		return []any{0, string(res)}
	}))
	select {}
}
