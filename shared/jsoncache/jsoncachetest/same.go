// Package jsoncachetest checks the Same functions jsoncache relies on:
// a kept encoding is only as fresh as Same is complete.
package jsoncachetest

import (
	"reflect"
	"testing"
	"time"
)

var timeType = reflect.TypeOf(time.Time{})

// step is one move from a value to a part of it.
type step struct {
	elem  bool // through a pointer
	field int  // else a struct field (-1: slice element 0)
}

func follow(x reflect.Value, s step) reflect.Value {
	switch {
	case s.elem:
		return x.Elem()
	case s.field < 0:
		return x.Index(0)
	}
	return x.Field(s.field)
}

// SameSeesEveryField changes every part of V one at a time — each field,
// through pointers and nested structs, slices (an element more, nil and
// empty swapped, and their first element's parts), nil pointers made non-nil and the
// reverse — starting from both a value with every part set and the zero
// value, each time on a clone, and fails the test when same still calls
// the clone the Same as the original. Because the parts are found by
// reflection, a field added to V later fails the test until same
// compares it. A clone that shares memory with the original fails too:
// the change then shows in both and same sees no difference.
func SameSeesEveryField[V any](t testing.TB, same func(a, b *V) bool, clone func(v *V) V) {
	t.Helper()
	var zero V
	full := Filled[V]()
	for _, base := range []V{full, zero} {
		c := clone(&base)
		if !same(&base, &c) {
			t.Fatalf("a clone of %+v is not the Same", base)
		}
		changes := 0
		var walk func(x reflect.Value, path []step, name string)
		try := func(path []step, name string, change func(x reflect.Value)) {
			c := clone(&base)
			x := reflect.ValueOf(&c).Elem()
			for _, s := range path {
				x = follow(x, s)
			}
			change(x)
			changes++
			if same(&base, &c) || same(&c, &base) {
				t.Errorf("%s changed, yet the Same: the kept JSON would go stale", name)
			}
		}
		walk = func(x reflect.Value, path []step, name string) {
			path = path[:len(path):len(path)]
			switch {
			case x.Type() == timeType:
				try(path, name, func(x reflect.Value) { x.Set(reflect.ValueOf(x.Interface().(time.Time).Add(time.Nanosecond))) })
			case x.Kind() == reflect.Struct:
				for i := 0; i < x.NumField(); i++ {
					if x.Type().Field(i).IsExported() {
						walk(x.Field(i), append(path, step{field: i}), name+"."+x.Type().Field(i).Name)
					}
				}
			case x.Kind() == reflect.Pointer:
				if x.IsNil() {
					try(path, name+" (nil → set)", func(x reflect.Value) { x.Set(reflect.New(x.Type().Elem())) })
					return
				}
				try(path, name+" (→ nil)", func(x reflect.Value) { x.Set(reflect.Zero(x.Type())) })
				walk(x.Elem(), append(path, step{elem: true}), name)
			case x.Kind() == reflect.Slice:
				try(path, name+" (one more)", func(x reflect.Value) { x.Set(reflect.Append(x, reflect.Zero(x.Type().Elem()))) })
				if x.IsNil() { // nil encodes null, empty [] (or "" for bytes)
					try(path, name+" (nil → empty)", func(x reflect.Value) { x.Set(reflect.MakeSlice(x.Type(), 0, 0)) })
				} else {
					try(path, name+" (→ nil)", func(x reflect.Value) { x.Set(reflect.Zero(x.Type())) })
				}
				if x.Len() > 0 {
					walk(x.Index(0), append(path, step{field: -1}), name+"[0]")
				}
			case x.Kind() == reflect.String:
				try(path, name, func(x reflect.Value) { x.SetString(x.String() + "x") })
			case x.Kind() == reflect.Bool:
				try(path, name, func(x reflect.Value) { x.SetBool(!x.Bool()) })
			case x.CanInt():
				try(path, name, func(x reflect.Value) { x.SetInt(x.Int() + 1) })
			case x.CanUint():
				try(path, name, func(x reflect.Value) { x.SetUint(x.Uint() + 1) })
			default:
				t.Fatalf("%s (%s): teach SameSeesEveryField to change it", name, x.Type())
			}
		}
		walk(reflect.ValueOf(&base).Elem(), nil, reflect.TypeOf(base).Name())
		if changes == 0 {
			t.Fatal("nothing to change")
		}
	}
}

// Filled is a V with every exported part set: strings, numbers, times, a
// non-nil pointer and a slice of one element, each filled in turn. An
// encoder that leaves a field out shows it on a Filled value.
func Filled[V any]() V {
	var v V
	fill(reflect.ValueOf(&v).Elem())
	return v
}

// fill sets every part of x: strings, numbers, times, a non-nil pointer
// and a slice of one element, each filled in turn.
func fill(x reflect.Value) {
	switch {
	case x.Type() == timeType:
		x.Set(reflect.ValueOf(time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)))
	case x.Kind() == reflect.Struct:
		for i := 0; i < x.NumField(); i++ {
			if x.Type().Field(i).IsExported() {
				fill(x.Field(i))
			}
		}
	case x.Kind() == reflect.Pointer:
		x.Set(reflect.New(x.Type().Elem()))
		fill(x.Elem())
	case x.Kind() == reflect.Slice && x.Type().Elem().Kind() == reflect.Uint8: // bytes: JSON (json.RawMessage)
		x.SetBytes([]byte(`{"s":1}`))
	case x.Kind() == reflect.Slice:
		x.Set(reflect.MakeSlice(x.Type(), 1, 1))
		fill(x.Index(0))
	case x.Kind() == reflect.Map && x.Type().Key().Kind() == reflect.String:
		x.Set(reflect.MakeMap(x.Type()))
		e := reflect.New(x.Type().Elem()).Elem()
		fill(e)
		x.SetMapIndex(reflect.ValueOf("k").Convert(x.Type().Key()), e)
	case x.Kind() == reflect.String:
		x.SetString("s")
	case x.Kind() == reflect.Bool:
		x.SetBool(true)
	case x.CanInt():
		x.SetInt(1)
	case x.CanUint():
		x.SetUint(1)
	}
}
