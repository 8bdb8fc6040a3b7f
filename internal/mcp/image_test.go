package mcp

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
)

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFitPNG(t *testing.T) {
	t.Parallel()
	// A 1600x800 chart-like image: white, a red left half.
	img := image.NewRGBA(image.Rect(0, 0, 1600, 800))
	for y := range 800 {
		for x := range 1600 {
			c := color.RGBA{255, 255, 255, 255}
			if x < 800 {
				c = color.RGBA{255, 0, 0, 255}
			}
			img.Set(x, y, c)
		}
	}
	data := encodePNG(t, img)

	small, outcome := fitPNG(data, imageBudget{side: 400, bytes: 1 << 20, pixels: 4 << 20})
	if outcome != figDownscaled {
		t.Fatalf("not fitted: %s", outcome)
	}
	got, err := png.Decode(bytes.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	if b := got.Bounds(); b.Dx() != 400 || b.Dy() != 200 {
		t.Fatalf("downscaled to %v, want 400x200 (aspect kept)", b)
	}
	if r, g, _, _ := got.At(50, 100).RGBA(); r>>8 != 255 || g>>8 != 0 {
		t.Fatalf("left half not red after downscaling: %v", got.At(50, 100))
	}
	if r, g, b, _ := got.At(350, 100).RGBA(); r>>8 != 255 || g>>8 != 255 || b>>8 != 255 {
		t.Fatalf("right half not white after downscaling: %v", got.At(350, 100))
	}

	// Within budget: unchanged, byte for byte.
	if same, outcome := fitPNG(small, imageBudget{side: 400, bytes: 1 << 20, pixels: 4 << 20}); outcome != figInline || !bytes.Equal(same, small) {
		t.Fatal("an image within budget was re-encoded")
	}
}

func TestFitPNGByteBudget(t *testing.T) {
	t.Parallel()
	// Noise compresses badly: only fewer pixels fit a byte budget.
	img := image.NewRGBA(image.Rect(0, 0, 300, 300))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
	}
	data := encodePNG(t, img)
	out, outcome := fitPNG(data, imageBudget{side: 1000, bytes: 20_000, pixels: 4 << 20})
	if outcome != figDownscaled || len(out) > 20_000 {
		t.Fatalf("fitPNG = %d bytes, %s; want at most 20000", len(out), outcome)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(out))
	if err != nil || cfg.Width >= 300 {
		t.Fatalf("not scaled down: %+v %v", cfg, err)
	}
	if _, outcome := fitPNG(data, imageBudget{side: 1000, bytes: 10, pixels: 4 << 20}); outcome != figUnfit {
		t.Fatalf("an impossible budget: %s", outcome)
	}
}

func TestFitPNGHostile(t *testing.T) {
	t.Parallel()
	if _, outcome := fitPNG([]byte("not a png"), imageBudget{side: 100, bytes: 1000, pixels: 4 << 20}); outcome != figRefused {
		t.Fatalf("garbage: %s", outcome)
	}
	// A header claiming 100000 x 100000 pixels is refused before anything is decoded.
	huge := encodePNG(t, image.NewGray(image.Rect(0, 0, 1, 1)))
	ihdr := bytes.Index(huge, []byte("IHDR"))
	bomb := bytes.Clone(huge)
	copy(bomb[ihdr+4:], []byte{0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0}) // width, height = 100000
	binary.BigEndian.PutUint32(bomb[ihdr+17:], crc32.ChecksumIEEE(bomb[ihdr:ihdr+17]))
	if cfg, err := png.DecodeConfig(bytes.NewReader(bomb)); err != nil || cfg.Width != 100000 {
		t.Fatalf("the bomb's header does not parse: %+v %v", cfg, err)
	}
	if _, outcome := fitPNG(bomb, imageBudget{side: 100, bytes: 1 << 20, pixels: 4 << 20}); outcome != figRefused {
		t.Fatalf("a decompression bomb: %s", outcome)
	}
}

// zeroPNG writes a PNG of w x h pixels of colour type ct (2: RGB, 6: RGBA, 0: gray)
// and depth bits, all zero, as real code would: rows streamed through zlib, so that
// a 6400x6400 16-bit image takes a few hundred KiB and no memory of its size.
func zeroPNG(t *testing.T, w, h int, ct, depth byte) []byte {
	t.Helper()
	var out bytes.Buffer
	chunk := func(typ string, data []byte) {
		binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.Write(&out, binary.BigEndian, c.Sum32())
	}
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = depth, ct
	chunk("IHDR", ihdr)
	channels := map[byte]int{0: 1, 2: 3, 6: 4}[ct]
	row := make([]byte, 1+w*channels*int(depth)/8)
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestSpeed)
	for range h {
		zw.Write(row)
	}
	zw.Close()
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// The budget refuses by the header alone what would cost more to decode than its
// pixels of 8-bit pixels: a 6400x6400 16-bit PNG (a few hundred KiB, 470 MiB decoded
// in RGBA) and a 16-bit one of any size to downscale; one within the budget of side
// and bytes goes as it is, whatever its depth.
func TestFitPNGBudget(t *testing.T) {
	t.Parallel()
	bomb := zeroPNG(t, 6400, 6400, 0, 16)
	if len(bomb) > 1<<20 {
		t.Fatalf("the 16-bit 6400x6400 PNG is %d bytes", len(bomb))
	}
	// The production budget: 4 Mi pixels.
	if _, outcome := fitPNG(bomb, imageBudget{side: 1024, bytes: 256 << 10, pixels: 4 << 20}); outcome != figRefused {
		t.Fatalf("the 16-bit 6400x6400 PNG: %s, want refused", outcome)
	}
	// A small budget, so that what it decodes is small.
	b := imageBudget{side: 128, bytes: 64 << 10, pixels: 256 << 10}
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"16-bit over the side":  {zeroPNG(t, 300, 300, 6, 16), figRefused},
		"8-bit over the side":   {zeroPNG(t, 300, 300, 6, 8), figDownscaled},
		"16-bit within budget":  {zeroPNG(t, 64, 64, 6, 16), figInline},
		"8-bit over the pixels": {zeroPNG(t, 513, 512, 2, 8), figRefused},
		"8-bit at the pixels":   {zeroPNG(t, 512, 512, 2, 8), figDownscaled},
	} {
		t.Run(name, func(t *testing.T) {
			out, outcome := fitPNG(c.data, b)
			if outcome != c.want {
				t.Fatalf("%s, want %s", outcome, c.want)
			}
			if (out != nil) != (outcome == figInline || outcome == figDownscaled) {
				t.Fatalf("%s with %d bytes", outcome, len(out))
			}
		})
	}
}
