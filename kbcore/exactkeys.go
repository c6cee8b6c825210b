package kbcore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// exactKeys reports the first object key of b that names a field of v's
// type only when letters are folded: encoding/json matches field names
// case-insensitively, but spec/README.md section 2 makes every key other
// than the ones a payload's type lists an unknown field. b has already
// decoded into v, so it is well-formed JSON. A value whose type has its
// own UnmarshalJSON is skipped: those call decodeStrict themselves.
func exactKeys(b []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return keysOf(dec, t)
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

func keysOf(dec *json.Decoder, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshaler) || t.Implements(unmarshaler) {
		return skipValue(dec)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar (or null) in a place of any kind
	}
	switch {
	case d == '{' && t.Kind() == reflect.Struct:
		names := fieldNames(t)
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			ft, ok := names[key]
			if !ok {
				return fmt.Errorf("json: unknown field %q", key)
			}
			if err := keysOf(dec, ft); err != nil {
				return err
			}
		}
	case d == '{' && t.Kind() == reflect.Map:
		for dec.More() {
			if _, err := dec.Token(); err != nil {
				return err
			}
			if err := keysOf(dec, t.Elem()); err != nil {
				return err
			}
		}
	case d == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for dec.More() {
			if err := keysOf(dec, t.Elem()); err != nil {
				return err
			}
		}
	default:
		return skipRest(dec)
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// skipValue reads one whole value.
func skipValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if _, ok := tok.(json.Delim); ok {
		return skipRest(dec)
	}
	return nil
}

// skipRest reads up to and including the delimiter that closes the
// object or array whose opening delimiter was just read.
func skipRest(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

var fieldNamesCache sync.Map // reflect.Type -> map[string]reflect.Type

// fieldNames maps the exact JSON name of each field of struct type t
// (embedded structs' fields included, as encoding/json promotes them) to
// its type.
func fieldNames(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldNamesCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range fieldNames(et) {
					if _, dup := m[k]; !dup {
						m[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	fieldNamesCache.Store(t, m)
	return m
}
