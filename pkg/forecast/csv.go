package forecast

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/textio"
)

// Bounds of a series CSV. A count above MaxCount (instances of one type)
// or a time beyond MaxTime overflows the squared errors into Inf and NaN;
// a step below MinStep makes a test span of days an integer overflow of
// steps (1e-300 printed -9223372036854775808 test steps).
const (
	MaxCount = 1e9
	MaxTime  = 1e12 // seconds, about 31,700 years
	MinStep  = 1    // seconds
)

// ParseSeriesCSV reads a series of bucket counts: a header "time,<bucket>,..."
// and one row per step, time in seconds, equally spaced and increasing by
// at least MinStep. A UTF-8 byte-order mark before the header is skipped.
// Errors name the file, line and column (and the bucket); NaN and Inf are
// rejected, so a model never trains on a hole, and counts above MaxCount
// and times beyond MaxTime too, so that no error overflows. A line longer
// than textio.MaxLine is a textio.LineTooLongError.
func ParseSeriesCSV(r io.Reader, file string) (Series, error) {
	cr := csv.NewReader(textio.NewCSVReader(r, file))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	hdr, err := cr.Read()
	if err == io.EOF {
		return Series{}, fmt.Errorf("%s: empty file: want a header time,<bucket>,...", file)
	}
	if err != nil {
		return Series{}, seriesCSVErr(file, err)
	}
	if len(hdr) > 0 {
		hdr[0] = strings.TrimPrefix(hdr[0], "\ufeff")
	}
	if len(hdr) < 2 || strings.TrimSpace(hdr[0]) != "time" {
		return Series{}, fmt.Errorf("%s:1: header must be time,<bucket>,... (got %q)", file, strings.Join(hdr, ","))
	}
	s := Series{}
	seen := map[string]bool{}
	for c, h := range hdr[1:] {
		h = strings.TrimSpace(h)
		if h == "" || seen[h] {
			return Series{}, fmt.Errorf("%s:1:%d: bucket name %q is empty or repeated", file, c+2, h)
		}
		seen[h] = true
		s.Buckets = append(s.Buckets, h)
	}
	var times []float64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Series{}, seriesCSVErr(file, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(hdr) {
			return Series{}, fmt.Errorf("%s:%d: %d fields, want %d (time and one per bucket)", file, line, len(rec), len(hdr))
		}
		row := make([]float64, len(s.Buckets))
		for c, f := range rec {
			v, err := textio.ParseDecimal(strings.TrimSpace(f))
			name := "time"
			if c > 0 {
				name = "bucket " + s.Buckets[c-1]
			}
			if err != nil {
				return Series{}, fmt.Errorf("%s:%d:%d (%s): %w", file, line, c+1, name, err)
			}
			if c == 0 {
				if math.Abs(v) > MaxTime {
					return Series{}, fmt.Errorf("%s:%d:%d (%s): %v is outside [-%g, %g] seconds", file, line, c+1, name, v, MaxTime, MaxTime)
				}
				times = append(times, v)
				continue
			}
			if v < 0 {
				return Series{}, fmt.Errorf("%s:%d:%d (%s): count %v is negative", file, line, c+1, name, v)
			}
			if v > MaxCount {
				return Series{}, fmt.Errorf("%s:%d:%d (%s): count %v is above the limit %g", file, line, c+1, name, v, MaxCount)
			}
			row[c-1] = v
		}
		if n := len(times); n >= 2 {
			step := times[1] - times[0]
			if !(step > 0) {
				return Series{}, fmt.Errorf("%s:%d: time %v does not increase", file, line, times[n-1])
			}
			if step < MinStep {
				return Series{}, fmt.Errorf("%s:%d: time %v is %v s after the first row's: the step must be at least %v s", file, line, times[n-1], step, MinStep)
			}
			if want := times[0] + float64(n-1)*step; math.Abs(times[n-1]-want) > 1e-6*math.Max(1, math.Abs(want)) {
				return Series{}, fmt.Errorf("%s:%d: time %v breaks the regular step of %v (want %v)", file, line, times[n-1], step, want)
			}
		}
		s.Values = append(s.Values, row)
	}
	if len(s.Values) == 0 {
		return Series{}, errors.New(file + ": no rows: the series is empty")
	}
	s.Start, s.Step = times[0], DefaultStep
	if len(times) >= 2 {
		s.Step = times[1] - times[0]
	}
	return s, nil
}

// seriesCSVErr locates a CSV reader error in file; a line-limit error
// names the file already.
func seriesCSVErr(file string, err error) error {
	if textio.IsLimit(err) {
		return err
	}
	return fmt.Errorf("%s: %w", file, err)
}

// WriteCSV writes s in the format ParseSeriesCSV reads.
func WriteCSV(w io.Writer, s Series) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(append([]string{"time"}, s.Buckets...)); err != nil {
		return err
	}
	rec := make([]string, len(s.Buckets)+1)
	for t, row := range s.Values {
		rec[0] = strconv.FormatFloat(s.Start+float64(t)*s.Step, 'g', -1, 64)
		for b, v := range row {
			rec[b+1] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
