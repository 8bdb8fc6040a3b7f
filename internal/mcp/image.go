package mcp

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/codeinterp/codeinterp/jobs"
)

// A figure is bytes the user's code wrote: its header may claim any size and depth,
// and decoding one costs what the header says (a 324 KiB 16-bit PNG of 6400x6400
// decodes to 470 MiB). So a figure is fitted only when its header allows (8 bits a
// channel, at most a pixel budget), a result fits only a few, and a process fits
// only a few at once; every other figure is a link.
const (
	// maxFigureBytes bounds a figure read at all (the worker keeps figures under
	// the result budget; this is a second bound, on what this process reads).
	maxFigureBytes = 16 << 20
	// fitSlots is how many figures this process decodes at once, whatever the
	// number of sessions: each may hold a decoded image of ImagePixels (4 bytes a
	// pixel) and its copy.
	fitSlots = 2
)

// fitting bounds the figures decoded at once in this process.
var fitting = semaphore.NewWeighted(fitSlots)

// What became of a figure, as /metrics counts them (codeinterp_mcp_figures_total):
// only "downscaled" and "unfit" were decoded.
const (
	figInline     = "inline"     // within the budget: sent as it is
	figDownscaled = "downscaled" // decoded and downscaled
	figUnfit      = "unfit"      // decoded, but no size fit the byte budget: a link
	figRefused    = "refused"    // refused by its header (16-bit, too many pixels, not a PNG): a link
	figOverCount  = "over_count" // past the figures a result fits: a link
	figUnread     = "unread"     // not read (storage failed, the call ended): a link
)

// imageBudget is what a figure sent as an image may be.
type imageBudget struct {
	side, bytes int   // its longer side and its PNG, once fitted
	pixels      int64 // what a figure may have to be decoded
}

// fits reports whether an image goes as it is.
func (b imageBudget) fits(cfg image.Config, size int) bool {
	return cfg.Width > 0 && cfg.Height > 0 && max(cfg.Width, cfg.Height) <= b.side && size <= b.bytes
}

// decodable reports whether the header of an image allows decoding it: at most the
// pixel budget, at most 8 bits a channel.
func (b imageBudget) decodable(cfg image.Config) bool {
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > b.pixels {
		return false
	}
	switch cfg.ColorModel {
	case color.RGBA64Model, color.NRGBA64Model, color.Gray16Model, color.Alpha16Model:
		return false
	}
	return true
}

// fitPNG returns the PNG data, downscaled if need be so that its longer side is at
// most b.side pixels and it is at most b.bytes long, so that a chart costs a model
// few tokens, and what became of it (one of the fig* outcomes). It averages the
// pixels each new pixel covers (a box filter: charts stay legible), and scales
// further down while the encoding is still too long. It decodes only what
// b.decodable allows; the caller holds a slot of fitting.
func fitPNG(data []byte, b imageBudget) ([]byte, string) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	switch {
	case err != nil:
		return nil, figRefused
	case b.fits(cfg, len(data)):
		return data, figInline
	case !b.decodable(cfg):
		return nil, figRefused
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, figUnfit
	}
	r := img.Bounds()
	src := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(src, src.Bounds(), img, r.Min, draw.Src)
	side := min(b.side, max(cfg.Width, cfg.Height))
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	for side >= 16 {
		var buf bytes.Buffer
		if err := enc.Encode(&buf, shrink(src, side)); err != nil {
			return nil, figUnfit
		}
		if buf.Len() <= b.bytes {
			return buf.Bytes(), figDownscaled
		}
		side = side * 3 / 4
	}
	return nil, figUnfit
}

// figure reads a figure and fits it to the image budget, or returns nil (the figure
// is then a link), with what became of it. The header is read first: a figure that
// is neither within the budget nor decodable is never read further; one to decode
// waits for a slot of fitting.
func (s *server) figure(ctx context.Context, f jobs.File) (*mcp.ImageContent, string) {
	if f.Key == "" || f.Size > maxFigureBytes {
		return nil, figRefused
	}
	rc, _, err := s.svc.OpenFile(ctx, f)
	if err != nil {
		return nil, figUnread
	}
	defer rc.Close()
	var head bytes.Buffer
	r := io.LimitReader(rc, maxFigureBytes)
	cfg, err := png.DecodeConfig(io.TeeReader(r, &head))
	if err != nil || (!s.budget.fits(cfg, int(f.Size)) && !s.budget.decodable(cfg)) {
		return nil, figRefused
	}
	held := false
	hold := func() bool {
		held = held || fitting.Acquire(ctx, 1) == nil
		return held
	}
	defer func() {
		if held {
			fitting.Release(1)
		}
	}()
	if !s.budget.fits(cfg, int(f.Size)) && !hold() {
		return nil, figUnread
	}
	if _, err := head.ReadFrom(r); err != nil {
		return nil, figUnread
	}
	if !s.budget.fits(cfg, head.Len()) && !hold() { // longer than the record said
		return nil, figUnread
	}
	fitted, outcome := fitPNG(head.Bytes(), s.budget)
	if fitted == nil {
		return nil, outcome
	}
	return &mcp.ImageContent{Data: fitted, MIMEType: "image/png"}, outcome
}

// shrink returns src scaled so that its longer side is side pixels (never up), each
// pixel the average of the source pixels it covers.
func shrink(src *image.RGBA, side int) *image.RGBA {
	sw, sh := src.Bounds().Dx(), src.Bounds().Dy()
	if max(sw, sh) <= side {
		return src
	}
	dw, dh := max(sw*side/max(sw, sh), 1), max(sh*side/max(sw, sh), 1)
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := range dh {
		y0, y1 := y*sh/dh, max((y+1)*sh/dh, y*sh/dh+1)
		for x := range dw {
			x0, x1 := x*sw/dw, max((x+1)*sw/dw, x*sw/dw+1)
			var sum [4]int
			for sy := y0; sy < y1; sy++ {
				row := src.Pix[sy*src.Stride+x0*4 : sy*src.Stride+x1*4]
				for i := 0; i < len(row); i += 4 {
					sum[0] += int(row[i])
					sum[1] += int(row[i+1])
					sum[2] += int(row[i+2])
					sum[3] += int(row[i+3])
				}
			}
			n := (y1 - y0) * (x1 - x0)
			o := y*dst.Stride + x*4
			for c := range 4 {
				dst.Pix[o+c] = uint8(sum[c] / n)
			}
		}
	}
	return dst
}
