package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// writeChart draws two bar panels, throughput and p99 latency, with one bar
// per scenario and contender that ran.
func writeChart(path string, results []result) error {
	var rows []result
	for _, r := range results {
		if !strings.HasPrefix(r.Note, "skipped") {
			rows = append(rows, r)
		}
	}
	const barW, gap, panelH, top, left = 70, 20, 220, 40, 20
	width := left*2 + len(rows)*(barW+gap)*2 + gap
	height := panelH + top + 60
	img := image.NewRGBA(image.Rect(0, 0, max(width, 400), height))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	colors := map[string]color.RGBA{
		"sync": {0x9e, 0x9e, 0x9e, 0xff}, "bundle": {0x42, 0x85, 0xf4, 0xff},
		"async": {0x0f, 0x9d, 0x58, 0xff}, "python": {0xf4, 0xb4, 0x00, 0xff},
	}
	panel := func(x0 int, title string, value func(result) float64, unit string) {
		label(img, x0, 20, title)
		maxV := 1.0
		for _, r := range rows {
			maxV = max(maxV, value(r))
		}
		for i, r := range rows {
			v := value(r)
			h := int(float64(panelH) * v / maxV)
			x := x0 + i*(barW+gap)
			c, ok := colors[r.Contender]
			if !ok {
				c = color.RGBA{0x60, 0x60, 0x60, 0xff}
			}
			draw.Draw(img, image.Rect(x, top+panelH-h, x+barW, top+panelH), &image.Uniform{c}, image.Point{}, draw.Src)
			label(img, x, top+panelH-h-4, fmt.Sprintf("%.0f%s", v, unit))
			label(img, x, top+panelH+16, r.Scenario)
			label(img, x, top+panelH+32, r.Contender)
		}
	}
	panel(left, "throughput (elements/s)", func(r result) float64 { return r.Throughput }, "")
	panel(left+len(rows)*(barW+gap)+gap, "p99 end-to-end latency (ms)", func(r result) float64 { return r.P99Ms }, "")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func label(img *image.RGBA, x, y int, s string) {
	d := &font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
