package experiment

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/drover-sched/drover/pkg/metrics"
)

// ReasonKey turns a job's reason into the key the summary counts it under:
// the job's own id after the word "job" becomes "<job>" and every number
// "N", so that "job a needs gpu=16" and "job b needs gpu=8" are one
// reason. (Only after "job", because an id such as "a" is also a word.) The per-job CSV of
// --out keeps the exact text.
func ReasonKey(reason, id string) string {
	var b strings.Builder
	word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-./", r) }
	rs := []rune(reason)
	for i := 0; i < len(rs); {
		if !word(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && word(rs[j]) {
			j++
		}
		tok := strings.TrimRight(string(rs[i:j]), ".") // a sentence's full stop is not part of the token
		rest := string(rs[i+len([]rune(tok)) : j])
		switch {
		case id != "" && tok == id && strings.HasSuffix(strings.ToLower(b.String()), "job "):
			b.WriteString("<job>")
		default:
			b.WriteString(numbersToN(tok))
		}
		b.WriteString(rest)
		i = j
	}
	return b.String()
}

// numbersToN replaces each run of digits (with a decimal point or an
// exponent inside it) by N.
func numbersToN(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if !unicode.IsDigit(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && (unicode.IsDigit(rs[j]) || rs[j] == '.' && j+1 < len(rs) && unicode.IsDigit(rs[j+1]) ||
			(rs[j] == 'e' || rs[j] == 'E') && j+1 < len(rs) && (unicode.IsDigit(rs[j+1]) || rs[j+1] == '-' || rs[j+1] == '+')) {
			if rs[j] == 'e' || rs[j] == 'E' {
				j++ // the sign or first digit of the exponent
			}
			j++
		}
		b.WriteByte('N')
		i = j
	}
	return b.String()
}

// countReasons counts the jobs of one run that were rejected, and those
// that neither finished nor were rejected (still pending or running when
// the run ended), by ReasonKey.
func countReasons(recs []metrics.JobRecord) (rejected, unfinished map[string]float64) {
	for i := range recs {
		r := &recs[i]
		var m *map[string]float64
		switch {
		case r.Rejected:
			m = &rejected
		case !r.Finished():
			m = &unfinished
		default:
			continue
		}
		if *m == nil {
			*m = map[string]float64{}
		}
		(*m)[ReasonKey(cmp.Or(r.Reason, "(no reason given)"), r.ID)]++
	}
	return rejected, unfinished
}

// meanCounts averages count maps over n runs, a reason missing from a run
// counting 0 there; nil when every map is empty.
func meanCounts(ms []map[string]float64, n int) map[string]float64 {
	var out map[string]float64
	for _, m := range ms {
		for k, v := range m {
			if out == nil {
				out = map[string]float64{}
			}
			out[k] += v
		}
	}
	for k := range out {
		out[k] /= float64(n) // once, so that 119 jobs over 5 seeds read 23.8
	}
	return out
}

// maxReasons is how many reasons per row and kind the table shows.
const maxReasons = 5

// writeReasons prints, below the table, the rejected and unfinished jobs of
// each row by reason, most frequent first: a trace on a cluster that can
// hold none of its jobs shows why without opening --out's files.
func writeReasons(w io.Writer, rows []Row) {
	for _, row := range rows {
		label := row.Policy
		if len(row.Params) > 0 {
			var ps []string
			for k, v := range row.Params {
				ps = append(ps, k+"="+v)
			}
			slices.Sort(ps)
			label += " (" + strings.Join(ps, ", ") + ")"
		}
		for _, kind := range []struct {
			name string
			m    map[string]float64
		}{{"rejected", row.Rejected}, {"unfinished", row.Unfinished}} {
			if len(kind.m) == 0 {
				continue
			}
			keys := make([]string, 0, len(kind.m))
			total := 0.0
			for k, v := range kind.m {
				keys = append(keys, k)
				total += v
			}
			slices.SortFunc(keys, func(a, b string) int {
				return cmp.Or(cmp.Compare(kind.m[b], kind.m[a]), strings.Compare(a, b))
			})
			fmt.Fprintf(w, "%s %s: %s jobs\n", kind.name, label, FormatValue(total))
			for i, k := range keys {
				if i == maxReasons {
					fmt.Fprintf(w, "  ... %d more reasons (per job: --out)\n", len(keys)-maxReasons)
					break
				}
				fmt.Fprintf(w, "  %s  %s\n", FormatValue(kind.m[k]), k)
			}
		}
	}
}
