package leasebench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Line is one series of a chart: Y[i] belongs to the chart's X[i].
type Line struct {
	Name string
	Y    []float64
}

// Chart is a simple line chart with categorical x values.
type Chart struct {
	Title, XLabel, YLabel string
	X                     []string
	Lines                 []Line
}

var palette = []string{"#444444", "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// WriteSVG draws c as a self-contained SVG document (no scripts, no external
// resources).
func (c Chart) WriteSVG(w io.Writer) error {
	const (
		width, height            = 720, 440
		left, right, top, bottom = 80, 170, 40, 60
		plotW, plotH             = width - left - right, height - top - bottom
	)
	ymax := 0.0
	for _, l := range c.Lines {
		for _, y := range l.Y {
			if !math.IsNaN(y) {
				ymax = max(ymax, y)
			}
		}
	}
	step := niceStep(ymax / 5)
	ytop := math.Ceil(ymax/step) * step
	if ytop == 0 {
		ytop = 1
	}
	xpos := func(i int) float64 {
		if len(c.X) < 2 {
			return left + plotW/2
		}
		return left + float64(i)*plotW/float64(len(c.X)-1)
	}
	ypos := func(v float64) float64 { return top + plotH - v/ytop*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(c.Title))
	for v := 0.0; v <= ytop+step/2; v += step {
		y := ypos(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, shortNum(v))
	}
	for i, x := range c.X {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xpos(i), top+plotH+18, html.EscapeString(x))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, top+plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+plotW/2, height-14, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+plotH/2, html.EscapeString(c.YLabel))
	for li, l := range c.Lines {
		color := palette[li%len(palette)]
		var pts []string
		for i, y := range l.Y {
			if i < len(c.X) && !math.IsNaN(y) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xpos(i), ypos(y)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		for _, p := range pts {
			x, y, _ := strings.Cut(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", x, y, color)
		}
		ly := top + 10 + li*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", left+plotW+15, ly, left+plotW+35, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", left+plotW+40, ly+4, html.EscapeString(l.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// shortNum prints 12000 as "12k".
func shortNum(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "k"
	}
	return fmt.Sprintf("%g", v)
}

// SweepChart returns the throughput-against-concurrency chart of r.
func (r *Results) SweepChart() Chart {
	c := Chart{Title: "acquire+release throughput, distinct keys (median of rounds)", XLabel: "goroutines", YLabel: "cycles per second"}
	var scs []Scenario
	for _, sc := range r.Scenarios {
		if sc.Kind == Parallel {
			scs = append(scs, sc)
			c.X = append(c.X, fmt.Sprint(sc.Workers))
		}
	}
	for _, name := range r.Contenders {
		l := Line{Name: name}
		for _, sc := range scs {
			l.Y = append(l.Y, Summarize(series(r.Runs[sc][name], rate)).Median)
		}
		c.Lines = append(c.Lines, l)
	}
	return c
}
