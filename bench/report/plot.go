package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one line of a line plot.
type Series struct {
	Name string
	X, Y []float64
}

// LinePlot writes a PNG line plot of series to path. logY plots Y on a log
// scale (latency curves).
func LinePlot(path, title, xLabel, yLabel string, logY bool, series ...Series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	for i, s := range series {
		pts := make(plotter.XYs, 0, len(s.X))
		for j := range s.X {
			if logY && s.Y[j] <= 0 {
				continue // no place for 0 on a log axis
			}
			pts = append(pts, plotter.XY{X: s.X[j], Y: s.Y[j]})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.2)
		p.Add(line)
		p.Legend.Add(s.Name, line)
	}
	p.Legend.Top = true
	return p.Save(22*vg.Centimeter, 12*vg.Centimeter, path)
}

// Bar is one bar of a bar chart.
type Bar struct {
	Label string
	Value float64
}

// BarChart writes a PNG bar chart to path.
func BarChart(path, title, yLabel string, bars ...Bar) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	vals := make(plotter.Values, len(bars))
	names := make([]string, len(bars))
	for i, b := range bars {
		vals[i], names[i] = b.Value, b.Label
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(36))
	if err != nil {
		return fmt.Errorf("bar chart: %w", err)
	}
	bc.Color = color.RGBA{R: 70, G: 110, B: 170, A: 255}
	p.Add(bc)
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	return p.Save(vg.Length(max(12, 3*len(bars)))*vg.Centimeter, 12*vg.Centimeter, path)
}
