package config

import (
	"reflect"
	"strings"
)

// Changed names, by config key (the hcl name, else the Go field name), the
// settings that differ between a and b: SIGHUP applies the ones that can
// change in place and reports the rest as needing a restart.
func Changed(a, b Config) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("hcl"), ",")
		if key == "" {
			key = f.Name
		}
		keys = append(keys, key)
	}
	return keys
}
