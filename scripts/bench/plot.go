package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// targetColor gives every target the same colour in every plot.
var targetColor = map[string]color.Color{
	tSidecar: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	tKafka:   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	tKfake:   color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // grey
	tGo:      color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	tRust:    color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
}

// writePlots draws the PNGs into dir and returns their file names (those
// that had data), keyed by plot.
func (b *bench) writePlots(dir string) (map[string]string, error) {
	out := map[string]string{}
	if name, err := b.plotThroughput(dir); err != nil {
		return nil, err
	} else if name != "" {
		out["throughput"] = name
	}
	if name, err := b.plotLatency(dir); err != nil {
		return nil, err
	} else if name != "" {
		out["latency"] = name
	}
	if name, err := b.plotGnet(dir); err != nil {
		return nil, err
	} else if name != "" {
		out["gnet"] = name
	}
	return out, nil
}

// find returns the successful runs of a workload/variant/target folded
// into one (meanResult), or nil.
func (b *bench) find(workload, variant, target string) *Result {
	return meanResult(b.runsOf(workload, variant, target))
}

// plotThroughput: grouped bars of MB/s, one group per produce variant and
// one for consume, one bar per target. The direct produce runs sit in the
// acks=1 group: an Iggy write confirmation is what acks=1 waits for.
func (b *bench) plotThroughput(dir string) (string, error) {
	groups := []string{"acks=1\nnone", "acks=1\nlz4", "acks=all\nnone", "acks=all\nlz4", "consume\n(earliest)"}
	value := func(g int, t string) float64 {
		var r *Result
		switch {
		case g == len(groups)-1:
			r = b.find(wConsume, "", t)
		case t == tGo || t == tRust:
			if g == 0 {
				r = b.find(wProduce, directVariant, t)
			}
		default:
			r = b.find(wProduce, produceVariants[g].name, t)
		}
		if r == nil {
			return 0
		}
		return r.MBPerS
	}
	var present []string
	for _, t := range allTargets {
		for g := range groups {
			if value(g, t) > 0 {
				present = append(present, t)
				break
			}
		}
	}
	if len(present) == 0 {
		return "", nil
	}
	p := plot.New()
	p.Title.Text = "Throughput, 1 KiB records (MB/s, higher is better)"
	p.Y.Label.Text = "MB/s (10^6 payload bytes per second)"
	p.Y.Min = 0
	w := vg.Points(14)
	for i, t := range present {
		vals := make(plotter.Values, len(groups))
		for g := range groups {
			vals[g] = value(g, t)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return "", err
		}
		bars.Color = targetColor[t]
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(present)-1)/2)
		p.Add(bars)
		p.Legend.Add(targetLabel[t], bars)
	}
	top := 0.0
	for _, t := range present {
		for g := range groups {
			top = math.Max(top, value(g, t))
		}
	}
	p.Y.Max = top * (1.15 + 0.1*float64(len(present))) // room for the legend
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	p.Legend.Top = true
	p.NominalX(groups...)
	p.Add(plotter.NewGrid())
	name := "throughput.png"
	return name, p.Save(9*vg.Inch, 5*vg.Inch, filepath.Join(dir, name))
}

// plotLatency: the CDF of closed-loop produce latency per target, latency
// on a log axis.
func (b *bench) plotLatency(dir string) (string, error) {
	p := plot.New()
	p.Title.Text = "Closed-loop single-record produce latency (CDF)"
	p.X.Label.Text = "latency (µs, log scale)"
	p.Y.Label.Text = "fraction of requests at or below"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	n := 0
	for _, t := range allTargets {
		r := b.find(wLatency, "", t)
		if r == nil || len(r.CDF) == 0 {
			continue
		}
		pts := make(plotter.XYs, 0, len(r.CDF))
		for _, c := range r.CDF {
			if c.US <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: c.US, Y: c.Q})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return "", err
		}
		line.Color = targetColor[t]
		line.Width = vg.Points(2)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s (p99 %s)", targetLabel[t], fmtUS(r.Latency.P99)), line)
		n++
	}
	if n == 0 {
		return "", nil
	}
	p.Legend.Left = false
	p.Legend.Top = false
	p.Legend.XOffs = -vg.Points(5)
	p.Legend.YOffs = vg.Points(30)
	p.Add(plotter.NewGrid())
	name := "latency_cdf.png"
	return name, p.Save(9*vg.Inch, 5*vg.Inch, filepath.Join(dir, name))
}

// gnetShort are the x labels of the gnet plot.
var gnetShort = map[string]string{
	"default":                  "default",
	"multicore=false (1 loop)": "1 loop",
	"num_event_loop=4":         "4 loops",
	"lock_os_thread=true":      "lock OS\nthread",
	"edge_triggered_io=true":   "edge-\ntriggered",
	"buffer caps 16 KiB":       "buffers\n16 KiB",
	"buffer caps 256 KiB":      "buffers\n256 KiB",
}

// plotGnet: the sidecar's produce MB/s per gnet setting, the bar the mean
// of the passes and a dot per pass.
func (b *bench) plotGnet(dir string) (string, error) {
	var names []string
	var means plotter.Values
	var dots plotter.XYs
	top := 0.0
	for i, a := range b.gnetAggregates() {
		label := gnetShort[a.name]
		if label == "" {
			label = a.name
		}
		names = append(names, label)
		means = append(means, a.mean)
		for _, r := range a.runs {
			dots = append(dots, plotter.XY{X: float64(i), Y: r.MBPerS})
			top = math.Max(top, r.MBPerS)
		}
	}
	if len(dots) == 0 {
		return "", nil
	}
	p := plot.New()
	p.Title.Text = "Sidecar produce throughput under gnet settings (acks=1, none)"
	p.Y.Label.Text = "MB/s"
	p.Y.Min, p.Y.Max = 0, top*1.3
	bars, err := plotter.NewBarChart(means, vg.Points(26))
	if err != nil {
		return "", err
	}
	bars.Color = targetColor[tSidecar]
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.Legend.Add("mean of the passes", bars)
	sc, err := plotter.NewScatter(dots)
	if err != nil {
		return "", err
	}
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	sc.GlyphStyle.Radius = vg.Points(3.5)
	sc.GlyphStyle.Color = color.Black
	p.Add(sc)
	p.Legend.Add("one pass", sc)
	p.Legend.Top = true
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	name := "gnet.png"
	return name, p.Save(9*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name))
}
