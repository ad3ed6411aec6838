package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The plot is drawn with the standard library and a bitmap font: three panels of grouped bars
// on log scales (the brokers differ by orders of magnitude), one bar per broker in each group.

var brokerColors = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0xff, 0x7f, 0x0e, 0xff}, // orange
}

var (
	black = color.RGBA{0, 0, 0, 0xff}
	grey  = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	white = color.RGBA{0xff, 0xff, 0xff, 0xff}
)

// barGroup is one cluster of bars: a label (two lines) and one value per broker; 0 means none.
// A failed bar (lost, duplicated, failed publishes, stalled) gets a "!" on top.
type barGroup struct {
	label1, label2 string
	values         []float64
	failed         []bool
}

// writePlot draws delivered msgs/s and p99 latency per workload and broker, and memory per idle
// connection, into a PNG file.
func writePlot(path string, rep *compareReport) error {
	var rates, p99s []barGroup
	for _, wl := range rep.Workloads {
		if wl == connsWorkload {
			continue
		}
		for _, size := range rep.Sizes {
			rg := barGroup{label1: wl, label2: fmtSize(size)}
			pg := rg
			for _, b := range rep.Brokers {
				var rate, p99 float64
				r := rep.find(wl, size, b)
				if usable(r) {
					rate, p99 = r.DeliverRate, r.Latency.P99
				}
				failed := r != nil && (len(r.violations()) > 0 || r.Stalled || r.Lost > 0)
				rg.values, rg.failed = append(rg.values, rate), append(rg.failed, failed)
				pg.values, pg.failed = append(pg.values, p99), append(pg.failed, failed)
			}
			rates, p99s = append(rates, rg), append(p99s, pg)
		}
	}
	var mem []barGroup
	if len(rep.Conns) > 0 {
		g := barGroup{label1: "idle persistent", label2: "connection"}
		for _, b := range rep.Brokers {
			v := 0.0
			for _, c := range rep.Conns {
				if c.Broker == b && c.Missing == "" && c.BytesPerConn > 0 {
					v = c.BytesPerConn / 1024
				}
			}
			g.values, g.failed = append(g.values, v), append(g.failed, false)
		}
		mem = append(mem, g)
	}

	const width, panelH, legendH = 1400, 330, 56
	panels := 0
	for _, p := range [][]barGroup{rates, p99s, mem} {
		if len(p) > 0 {
			panels++
		}
	}
	img := image.NewRGBA(image.Rect(0, 0, width, legendH+panels*panelH))
	fill(img, img.Bounds(), white)

	// Legend.
	x := 90
	for i, b := range rep.Brokers {
		fill(img, image.Rect(x, 14, x+14, 28), brokerColors[i%len(brokerColors)])
		drawText(img, x+20, 26, b, black)
		x += 40 + 7*len(b)
	}
	drawText(img, 90, 46, "log scales; no bar: broker missing or run not done; !: messages lost or duplicated, publishes failed, or broker stalled", black)

	y := legendH
	if len(rates) > 0 {
		drawPanel(img, image.Rect(0, y, width, y+panelH), "delivered messages/s (higher is better)", rates, len(rep.Brokers))
		y += panelH
	}
	if len(p99s) > 0 {
		drawPanel(img, image.Rect(0, y, width, y+panelH), "p99 publish-to-delivery latency, ms (lower is better)", p99s, len(rep.Brokers))
		y += panelH
	}
	if len(mem) > 0 {
		w := min(width, 400)
		drawPanel(img, image.Rect(0, y, w, y+panelH), "broker memory per idle connection, KiB", mem, len(rep.Brokers))
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drawPanel draws a title, a log-scale y axis with a grid line per decade, and the bar groups.
func drawPanel(img *image.RGBA, r image.Rectangle, title string, groups []barGroup, bars int) {
	const left, right, top, bottom = 80, 20, 30, 45
	plot := image.Rect(r.Min.X+left, r.Min.Y+top, r.Max.X-right, r.Max.Y-bottom)
	drawText(img, plot.Min.X, r.Min.Y+18, title, black)

	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range groups {
		for _, v := range g.values {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		drawText(img, plot.Min.X, plot.Min.Y+20, "no data", black)
		return
	}
	lo, hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if hi <= lo {
		hi = lo + 1
	}
	yOf := func(v float64) int {
		frac := (math.Log10(v) - lo) / (hi - lo)
		return plot.Max.Y - int(frac*float64(plot.Dy()))
	}
	for d := lo; d <= hi; d++ {
		v := math.Pow(10, d)
		y := yOf(v)
		fill(img, image.Rect(plot.Min.X, y, plot.Max.X, y+1), grey)
		label := axisLabel(v)
		drawText(img, plot.Min.X-8-7*len(label), y+4, label, black)
	}
	fill(img, image.Rect(plot.Min.X, plot.Min.Y, plot.Min.X+1, plot.Max.Y+1), black)
	fill(img, image.Rect(plot.Min.X, plot.Max.Y, plot.Max.X, plot.Max.Y+1), black)

	groupW := plot.Dx() / len(groups)
	barW := max(2, (groupW-16)/max(bars, 1))
	for gi, g := range groups {
		gx := plot.Min.X + gi*groupW + 8
		for bi, v := range g.values {
			if v <= 0 {
				continue
			}
			x := gx + bi*barW
			fill(img, image.Rect(x, yOf(v), x+barW-2, plot.Max.Y), brokerColors[bi%len(brokerColors)])
			if g.failed[bi] {
				drawText(img, x+barW/2-4, yOf(v)-3, "!", black)
			}
		}
		cx := plot.Min.X + gi*groupW + groupW/2
		drawText(img, cx-7*len(g.label1)/2, plot.Max.Y+16, g.label1, black)
		drawText(img, cx-7*len(g.label2)/2, plot.Max.Y+30, g.label2, black)
	}
}

// axisLabel prints a power of ten: 0.01, 1, 100, 10k, 1M.
func axisLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", v)
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, &image.Uniform{C: c}, image.Point{}, draw.Src)
}

func drawText(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: &image.Uniform{C: c}, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
