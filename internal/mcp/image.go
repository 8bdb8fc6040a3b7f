package mcp

import (
	"bytes"
	"image"
	"image/draw"
	"image/png"
)

// maxDecodePixels bounds the images fitPNG decodes: a PNG's header may claim any
// size, and decoding allocates four bytes per pixel.
const maxDecodePixels = 40 << 20

// fitPNG returns the PNG data, downscaled if need be so that its longer side is at
// most maxSide pixels and it is at most maxBytes long, so that a chart costs a model
// few tokens. It averages the pixels each new pixel covers (a box filter: charts stay
// legible), and scales further down while the encoding is still too long. It
// reports false for data it will not decode (not a PNG, or over maxDecodePixels) or
// cannot fit.
func fitPNG(data []byte, maxSide, maxBytes int) ([]byte, bool) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxDecodePixels {
		return nil, false
	}
	if max(cfg.Width, cfg.Height) <= maxSide && len(data) <= maxBytes {
		return data, true
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, false
	}
	b := img.Bounds()
	src := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(src, src.Bounds(), img, b.Min, draw.Src)
	side := min(maxSide, max(cfg.Width, cfg.Height))
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	for side >= 16 {
		var buf bytes.Buffer
		if err := enc.Encode(&buf, shrink(src, side)); err != nil {
			return nil, false
		}
		if buf.Len() <= maxBytes {
			return buf.Bytes(), true
		}
		side = side * 3 / 4
	}
	return nil, false
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
