package textio

import (
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// zeros is an endless source of zero bytes, like /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestReader(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		csv   bool
		limit int
		want  string // the bytes read before the error
		err   *LineTooLongError
	}{
		{name: "short lines pass", in: "ab\ncd\n", limit: 2, want: "ab\ncd\n"},
		{name: "no final newline", in: "ab\ncd", limit: 2, want: "ab\ncd"},
		{name: "line 2 too long", in: "ab\ncde\n", limit: 2, want: "ab\ncd", err: &LineTooLongError{File: "f", Line: 2, Limit: 2}},
		{name: "quoted newline ends a line outside CSV", in: "\"a\nb\"\n", limit: 2, want: "\"a\nb\"\n"},
		{name: "quoted newline continues a CSV record", in: "x\n\"a\nb\"\n", csv: true, limit: 4, want: "x\n\"a\nb", err: &LineTooLongError{File: "f", Line: 2, Limit: 4}},
		{name: "escaped quote stays quoted", in: "\"a\"\"\nb\"\nc\n", csv: true, limit: 6, want: "\"a\"\"\nb", err: &LineTooLongError{File: "f", Line: 1, Limit: 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.in), "f").WithLimit(tc.limit)
			if tc.csv {
				r = NewCSVReader(strings.NewReader(tc.in), "f").WithLimit(tc.limit)
			}
			var got []byte
			buf := make([]byte, 3)
			var err error
			for {
				var n int
				n, err = r.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("bytes (-want +got):\n%s", diff)
			}
			var le *LineTooLongError
			if tc.err == nil {
				if err != io.EOF {
					t.Errorf("err = %v, want EOF", err)
				}
				return
			}
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a LineTooLongError", err)
			}
			if diff := cmp.Diff(tc.err, le); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEndlessCSV: encoding/csv over endless zeros (no newline ever) stops
// with the named error instead of growing its buffer without bound.
func TestEndlessCSV(t *testing.T) {
	cr := csv.NewReader(NewCSVReader(zeros{}, "/dev/zero"))
	_, err := cr.Read()
	want := "/dev/zero:1: line longer than 1048576 bytes (drover's limit for a line of text input)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if !IsLimit(err) {
		t.Errorf("IsLimit(%v) = false", err)
	}
}

func TestReadAll(t *testing.T) {
	_, err := ReadAll(zeros{}, "z")
	if !IsLimit(err) || !strings.Contains(err.Error(), "z:1: line longer than") {
		t.Errorf("endless line: err = %v", err)
	}
	big := io.LimitReader(strings.NewReader(strings.Repeat(strings.Repeat("a", 1000)+"\n", MaxFile/1000+1)), MaxFile+10)
	if _, err := ReadAll(big, "big"); err == nil || err.Error() != "big: larger than 67108864 bytes (drover's limit for a text file read whole)" {
		t.Errorf("large file: err = %v", err)
	}
	b, err := ReadAll(strings.NewReader("a: 1\n"), "ok")
	if err != nil || string(b) != "a: 1\n" {
		t.Errorf("small file: %q, %v", b, err)
	}
}

func TestParseDecimal(t *testing.T) {
	ok := map[string]float64{"1": 1, "-2.5": -2.5, "+.5": 0.5, "3.": 3, "1e3": 1000, "1E-2": 0.01, "007": 7}
	for s, want := range ok {
		if got, err := ParseDecimal(s); err != nil || got != want {
			t.Errorf("ParseDecimal(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	bad := map[string]string{
		"0x1p6": `"0x1p6" is not a decimal number`, "1_000": `"1_000" is not a decimal number`,
		"NaN": `"NaN" is not a decimal number`, "inf": `"inf" is not a decimal number`, "": `"" is not a decimal number`,
		".": `"." is not a decimal number`, "1e": `"1e" is not a decimal number`, "1e400": `"1e400" is not a finite number`,
		" 1": `" 1" is not a decimal number`, "1.2.3": `"1.2.3" is not a decimal number`,
	}
	for s, want := range bad {
		if _, err := ParseDecimal(s); err == nil || err.Error() != want {
			t.Errorf("ParseDecimal(%q): err = %v, want %q", s, err, want)
		}
	}
}
