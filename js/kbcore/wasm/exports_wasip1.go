//go:build wasip1

package main

import "unsafe"

// The module is a WASI reactor (-buildmode=c-shared): the host calls
// _initialize once, then these exports. A call's byte strings are written
// by the host into buffers the module owns (kb_arg, then kb_arg_len), its
// answer stays in the module until the next call (kb_out_ptr, kb_out_len).
// Go's collector does not move objects, so the pointers stay valid while
// the buffers are referenced from here.

var (
	sess    = newSession()
	argBufs [4][]byte
	argLens [4]int32
	out     []byte
)

// kbArg returns a buffer of at least n bytes for argument i (0-3).
//
//go:wasmexport kb_arg
func kbArg(i, n int32) unsafe.Pointer {
	if i < 0 || i >= int32(len(argBufs)) || n < 0 {
		return nil
	}
	if int32(cap(argBufs[i])) < n || cap(argBufs[i]) == 0 {
		argBufs[i] = make([]byte, max(n, 64))
	}
	argLens[i] = 0
	return unsafe.Pointer(unsafe.SliceData(argBufs[i]))
}

// kbArgLen sets how many bytes of argument i's buffer the host wrote.
//
//go:wasmexport kb_arg_len
func kbArgLen(i, n int32) int32 {
	if i < 0 || i >= int32(len(argBufs)) || n < 0 || int(n) > len(argBufs[i]) {
		return 1
	}
	argLens[i] = n
	return 0
}

// kbCall runs operation op with the integers a and b and the arguments
// written since the last call; 0: the answer is JSON, 1: it is an error's
// text.
//
//go:wasmexport kb_call
func kbCall(op int32, a, b int64) int32 {
	var args [4][]byte
	for i := range args {
		args[i] = argBufs[i][:argLens[i]]
		argLens[i] = 0
	}
	res, err := sess.call(int(op), [2]int64{a, b}, args)
	if err != nil {
		out = []byte(err.Error())
		return 1
	}
	out = res
	return 0
}

//go:wasmexport kb_out_ptr
func kbOutPtr() unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(out)) }

//go:wasmexport kb_out_len
func kbOutLen() int32 { return int32(len(out)) }

func main() {}
