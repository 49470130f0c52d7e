package status

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Plural writes "1 restart", "2 restarts", "3 entries": the count with the
// noun in the right number. n is any integer or a pointer to one.
func Plural(n any, noun string) string {
	v := reflect.ValueOf(n)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "0 " + plural(noun)
		}
		v = v.Elem()
	}
	var count int64
	switch {
	case v.CanInt():
		count = v.Int()
	case v.CanUint():
		count = int64(v.Uint())
	}
	if count == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", count, plural(noun))
}

func plural(noun string) string {
	if strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])) {
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// HumanMs writes a duration in milliseconds as a person reads it: "42 s",
// "3 min 5 s", "2 h 10 min", "3 d 4 h".
func HumanMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return "under 1 s"
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return pair(int(d.Minutes()), "min", int(d.Seconds())%60, "s")
	case d < 24*time.Hour:
		return pair(int(d.Hours()), "h", int(d.Minutes())%60, "min")
	default:
		return pair(int(d.Hours())/24, "d", int(d.Hours())%24, "h")
	}
}

// pair writes "3 h 5 min", or "3 h" when the smaller unit is zero.
func pair(big int, bigUnit string, small int, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d %s", big, bigUnit)
	}
	return fmt.Sprintf("%d %s %d %s", big, bigUnit, small, smallUnit)
}

// Ago writes how long before now t was ("5 s ago"), or "never" for nil.
func Ago(now time.Time, t any) string {
	at, ok := timeOf(t)
	if !ok {
		return "never"
	}
	if at.After(now) {
		return "just now"
	}
	return HumanMs(now.Sub(at).Milliseconds()) + " ago"
}

// Until writes how long after now t is ("in 4 min 10 s"), or "now" when
// it has passed.
func Until(now time.Time, t any) string {
	at, ok := timeOf(t)
	if !ok {
		return "—"
	}
	if !at.After(now) {
		return "now"
	}
	return "in " + HumanMs(at.Sub(now).Milliseconds())
}

func uptime(now time.Time, t any) string {
	at, ok := timeOf(t)
	if !ok {
		return "—"
	}
	return HumanMs(now.Sub(at).Milliseconds())
}

func timeOf(t any) (time.Time, bool) {
	switch v := t.(type) {
	case time.Time:
		return v, !v.IsZero()
	case *time.Time:
		if v == nil || v.IsZero() {
			return time.Time{}, false
		}
		return *v, true
	}
	return time.Time{}, false
}

// joinOr lists items with commas, or says none when there are none.
func joinOr(items []string, none string) string {
	if len(items) == 0 {
		return none
	}
	return strings.Join(items, ", ")
}
