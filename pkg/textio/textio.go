// Package textio bounds text input: every file drover reads as text
// (traces, series and catalog CSVs, profiles, configs) goes through a
// Reader that fails with a LineTooLongError, naming the file and line, once
// a line exceeds MaxLine bytes, instead of buffering an endless line (such
// as /dev/zero) until the process runs out of memory.
package textio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Limits of text input. MaxLine is far above any real line (the longest
// line of the embedded Philly trace is under 100 bytes, a profile's under
// 1 KiB); MaxFile bounds a whole file read into memory (profiles and
// configs, which are YAML documents rather than streams of rows).
const (
	MaxLine = 1 << 20  // 1 MiB
	MaxFile = 64 << 20 // 64 MiB
)

// LineTooLongError reports a line longer than Limit bytes at File:Line
// (1-based).
type LineTooLongError struct {
	File  string
	Line  int
	Limit int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("%s:%d: line longer than %d bytes (drover's limit for a line of text input)", e.File, e.Line, e.Limit)
}

// FileTooLargeError reports a file read whole that exceeds Limit bytes.
type FileTooLargeError struct {
	File  string
	Limit int64
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %d bytes (drover's limit for a text file read whole)", e.File, e.Limit)
}

// Reader passes its source through unchanged until a line exceeds the
// limit; from then on every Read returns the LineTooLongError. In CSV mode
// a newline inside a double-quoted field does not end the line, so a
// quoted field of endless newlines is bounded too (a record, not a
// physical line, is what the CSV parser buffers); the error names the
// physical line where the over-long line or record starts.
type Reader struct {
	r      io.Reader
	file   string
	limit  int
	csv    bool
	line   int // current physical line, 1-based
	start  int // physical line where the current (logical) line began
	n      int // bytes in the current logical line
	quoted bool
	err    error
}

// NewReader bounds lines of r at MaxLine bytes; file names r in errors.
func NewReader(r io.Reader, file string) *Reader {
	return &Reader{r: r, file: file, limit: MaxLine, line: 1, start: 1}
}

// NewCSVReader is NewReader for CSV: newlines inside double quotes do not
// end a line (record).
func NewCSVReader(r io.Reader, file string) *Reader {
	rd := NewReader(r, file)
	rd.csv = true
	return rd
}

// WithLimit sets the line limit (bytes, > 0) and returns r; for tests.
func (r *Reader) WithLimit(n int) *Reader {
	r.limit = n
	return r
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.r.Read(p)
	for i := 0; i < n; i++ {
		switch c := p[i]; {
		case c == '"' && r.csv:
			r.quoted = !r.quoted
			r.n++
		case c == '\n':
			r.line++
			if !r.quoted {
				r.n, r.start = 0, r.line
				continue
			}
			r.n++
		default:
			r.n++
		}
		if r.n > r.limit {
			r.err = &LineTooLongError{File: r.file, Line: r.start, Limit: r.limit}
			// The bytes before the offending one are delivered; the
			// error comes with them or with the next Read.
			if i == 0 {
				return 0, r.err
			}
			return i, nil
		}
	}
	return n, err
}

// ReadFile reads a whole text file, bounded by MaxFile bytes and MaxLine
// bytes a line.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path)
}

// ReadAll reads r whole, bounded as ReadFile is; file names r in errors.
func ReadAll(r io.Reader, file string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(NewReader(r, file), MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFile {
		return nil, &FileTooLargeError{File: file, Limit: MaxFile}
	}
	return b, nil
}

// IsLimit reports whether err is (or wraps) a LineTooLongError or a
// FileTooLargeError.
func IsLimit(err error) bool {
	var l *LineTooLongError
	var f *FileTooLargeError
	return errors.As(err, &l) || errors.As(err, &f)
}

// ParseDecimal parses a number written in decimal notation, the only one
// drover's text inputs take: an optional sign, digits with an optional
// decimal point, an optional exponent (1, -2.5, .5, 1e3). strconv.ParseFloat
// also takes Go's hexadecimal floats (0x1p6 is 64) and digit separators
// (1_000), which a trace or a series written by another tool never means;
// NaN and Inf are refused too. The error says what is wrong with s.
func ParseDecimal(s string) (float64, error) {
	if !isDecimal(s) {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil { // out of range: ±Inf
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return v, nil
}

// isDecimal reports whether s matches [+-]?(d+(.d*)?|.d+)([eE][+-]?d+)?.
func isDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
