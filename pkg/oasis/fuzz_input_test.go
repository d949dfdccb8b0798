package oasis

import "testing"

// FuzzDecodeSchedule: a schedule label is user-editable text, so decoding
// it never panics or allocates beyond MaxSlots slots; an accepted schedule
// has a valid range, one entry per slot, known nodes and positive bounded
// counts. The seeds include the ranges that panicked (issue 17 item 12).
func FuzzDecodeSchedule(f *testing.F) {
	for _, s := range []string{"0-2|0:a*2/b*1;2:a*1,b*1/", "3-3|", "0-9223372036854775806|", "5-4|", "0-1|1:c*1/", "0-0|0:a*-1/",
		"0-0|0:a*99999999999/"} {
		f.Add(s)
	}
	index := map[string]int{"a": 0, "b": 1}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodeSchedule(s, index)
		if err != nil {
			return
		}
		if p.Start < 0 || p.End < p.Start || p.End >= MaxSlots || len(p.Slots) != p.End-p.Start+1 {
			t.Fatalf("%q: plan %d-%d with %d slots", s, p.Start, p.End, len(p.Slots))
		}
		for _, sp := range p.Slots {
			for _, c := range append(append([]nodeCount(nil), sp.W...), sp.P...) {
				if c.Node < 0 || c.Node > 1 || c.N <= 0 || c.N > maxScheduleCount {
					t.Fatalf("%q: entry %+v", s, c)
				}
			}
		}
	})
}
