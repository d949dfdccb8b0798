// Package chart draws the few charts drover reports (line charts such as a
// JCT CDF per policy, step charts of replica counts over time, and
// per-node timelines) as standalone SVG files with no dependencies, so
// they open in any browser and diff as text.
package chart

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Series is one named line.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
}

// Line is a line chart.
type Line struct {
	Title, XLabel, YLabel string
	LogX                  bool
	Step                  bool // draw as steps (value holds until the next point)
	// Points draws each point as a marker and no line (a scatter plot,
	// such as a Pareto plot with one point per series).
	Points bool
	Series []Series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// Color returns the palette colour for index i.
func Color(i int) string { return palette[i%len(palette)] }

const (
	width, height          = 760.0, 440.0
	left, right, top, bott = 70.0, 170.0, 40.0, 50.0
)

// WriteSVG renders the chart.
func (c *Line) WriteSVG(w io.Writer) error {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			x := s.X[i]
			if c.LogX {
				if x <= 0 {
					continue
				}
				x = math.Log10(x)
			}
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax, ymax = 0, 1, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	if ymax == ymin {
		ymax = ymin + 1
	}
	pw, ph := width-left-right, height-top-bott
	px := func(x float64) float64 {
		if c.LogX {
			x = math.Log10(x)
		}
		return left + (x-xmin)/(xmax-xmin)*pw
	}
	py := func(y float64) float64 { return top + ph - (y-ymin)/(ymax-ymin)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	for i := 0; i <= 5; i++ {
		y := ymin + (ymax-ymin)*float64(i)/5
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, left+pw, py(y), py(y), left-6, py(y)+4, tick(y))
		xv := xmin + (xmax-xmin)*float64(i)/5
		label := xv
		if c.LogX {
			label = math.Pow(10, xv)
		}
		xp := left + pw*float64(i)/5
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="#ddd"/><text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n",
			xp, xp, top, top+ph, xp, top+ph+16, tick(label))
	}
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", left+pw/2, height-12, esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16,%g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+ph/2, esc(c.YLabel))
	for i, s := range c.Series {
		var pts []string
		prevY := math.NaN()
		for k := range s.X {
			if c.LogX && s.X[k] <= 0 {
				continue
			}
			if c.Step && !math.IsNaN(prevY) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[k]), py(prevY)))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[k]), py(s.Y[k])))
			prevY = s.Y[k]
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5,3"`
		}
		if c.Points {
			for k := range s.X {
				if c.LogX && s.X[k] <= 0 {
					continue
				}
				x, y := px(s.X[k]), py(s.Y[k])
				if i < len(palette) {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s" fill-opacity="0.8"><title>%s</title></circle>`, x, y, Color(i), esc(s.Name))
				} else {
					fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s" fill-opacity="0.8"><title>%s</title></rect>`, x-4, y-4, Color(i), esc(s.Name))
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" fill="%s">%s</text>`+"\n", x+6, y-5, Color(i), esc(s.Name))
			}
		} else {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`+"\n", Color(i), dash, strings.Join(pts, " "))
		}
		ly := top + 14 + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="%s" stroke-width="3"/><text x="%g" y="%g">%s</text>`+"\n",
			left+pw+12, left+pw+32, ly-4, ly-4, Color(i), left+pw+38, ly, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// CDF turns values into the X (sorted values) and Y (cumulative fraction)
// of an empirical CDF.
func CDF(sorted []float64) (x, y []float64) {
	n := float64(len(sorted))
	for i, v := range sorted {
		x = append(x, v)
		y = append(y, float64(i+1)/n)
	}
	return x, y
}

func tick(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e6 || a < 1e-2:
		return fmt.Sprintf("%.1e", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

func esc(s string) string { return html.EscapeString(s) }

// Span is one bar on a timeline row.
type Span struct {
	Row        string
	Start, End float64
	Label      string
	Color      int // palette index
}

// Mark is a point event on a timeline (a migration, say).
type Mark struct {
	Row   string
	T     float64
	Label string
}

// Timeline is a Gantt-like chart: one row per node, bars for what ran.
type Timeline struct {
	Title string
	Rows  []string
	Spans []Span
	Marks []Mark
}

// WriteSVG renders the timeline.
func (t *Timeline) WriteSVG(w io.Writer) error {
	tmax := 1.0
	for _, s := range t.Spans {
		tmax = math.Max(tmax, s.End)
	}
	rowH := 26.0
	h := top + bott + rowH*float64(len(t.Rows))
	pw := width - left - 30
	px := func(x float64) float64 { return left + x/tmax*pw }
	idx := map[string]int{}
	for i, r := range t.Rows {
		idx[r] = i
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="11">`+"\n", width, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%g" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(t.Title))
	for i, r := range t.Rows {
		y := top + float64(i)*rowH
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">%s</text>`+"\n", left-6, y+rowH/2+4, esc(r))
	}
	for _, s := range t.Spans {
		y := top + float64(idx[s.Row])*rowH
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%g" fill="%s" fill-opacity="0.6" stroke="white"><title>%s</title></rect>`+"\n",
			px(s.Start), y+3, math.Max(px(s.End)-px(s.Start), 0.5), rowH-6, Color(s.Color), esc(s.Label))
	}
	for _, m := range t.Marks {
		y := top + float64(idx[m.Row])*rowH
		fmt.Fprintf(&b, `<path d="M%.1f %.1f l5 -8 h-10 z" fill="black"><title>%s</title></path>`+"\n", px(m.T), y+rowH-2, esc(m.Label))
	}
	for i := 0; i <= 5; i++ {
		x := tmax * float64(i) / 5
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s s</text>`+"\n", px(x), h-bott+16, tick(x))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
