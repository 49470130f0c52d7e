package raftstore

import (
	"reflect"
	"testing"
	"time"
)

// Every field of a conversation, and of its client loop, takes part in
// Same: changing any one of them (found by reflection, so a field added
// later is covered) makes the records differ. A Clone is the Same and
// shares nothing: changing the clone's loop or seen ids leaves the
// original as it was.
func TestConversationSameSeesEveryField(t *testing.T) {
	at := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	base := Conversation{LocalID: "c1", Platform: "platform_a", Seen: []string{"m1"},
		ClientLoop: &ClientLoop{State: LoopRunning, Rounds: 1, ReportedAt: at}, CreatedAt: at, UpdatedAt: at}
	changed := 0
	var each func(v reflect.Value, path string, mutate func(func(reflect.Value)))
	each = func(v reflect.Value, path string, mutate func(func(reflect.Value))) {
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name := path + f.Name
			at := func(fn func(reflect.Value)) { mutate(func(c reflect.Value) { fn(c.Field(i)) }) }
			switch {
			case f.Type == reflect.TypeOf(time.Time{}):
				at(func(x reflect.Value) { x.Set(reflect.ValueOf(x.Interface().(time.Time).Add(time.Nanosecond))) })
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
				each(v.Field(i).Elem(), name+".", func(fn func(reflect.Value)) {
					at(func(x reflect.Value) {
						cp := reflect.New(x.Type().Elem())
						cp.Elem().Set(x.Elem())
						x.Set(cp)
						fn(cp.Elem())
					})
				})
				at(func(x reflect.Value) { x.Set(reflect.Zero(x.Type())) }) // nil
			case f.Type.Kind() == reflect.String:
				at(func(x reflect.Value) { x.SetString(x.String() + "x") })
			case f.Type.Kind() == reflect.Int:
				at(func(x reflect.Value) { x.SetInt(x.Int() + 1) })
			case f.Type.Kind() == reflect.Bool:
				at(func(x reflect.Value) { x.SetBool(!x.Bool()) })
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String:
				at(func(x reflect.Value) { x.Set(reflect.Append(x, reflect.ValueOf("y"))) })
			default:
				t.Fatalf("field %s (%s): teach this test to change it, and Same to compare it", name, f.Type)
			}
		}
	}
	each(reflect.ValueOf(base), "", func(fn func(reflect.Value)) {
		c := base.Clone()
		if !base.Same(&c) {
			t.Fatal("a clone is not the Same")
		}
		fn(reflect.ValueOf(&c).Elem())
		changed++
		if base.Same(&c) || c.Same(&base) {
			t.Errorf("a change of one field is the Same: %+v (loop %+v) vs %+v (loop %+v)", c, c.ClientLoop, base, base.ClientLoop)
		}
	})
	if n := reflect.TypeOf(base).NumField() + reflect.TypeOf(ClientLoop{}).NumField(); changed < n {
		t.Fatalf("%d changes for %d fields", changed, n)
	}
	c := base.Clone()
	c.ClientLoop.Rounds++
	c.Seen[0] = "other"
	if base.ClientLoop.Rounds != 1 || base.Seen[0] != "m1" {
		t.Fatal("a clone shares its loop or seen ids with the original")
	}
}
