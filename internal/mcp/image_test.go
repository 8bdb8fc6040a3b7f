package mcp

import (
	"bytes"
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

	small, ok := fitPNG(data, 400, 1<<20)
	if !ok {
		t.Fatal("not fitted")
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
	if same, ok := fitPNG(small, 400, 1<<20); !ok || !bytes.Equal(same, small) {
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
	out, ok := fitPNG(data, 1000, 20_000)
	if !ok || len(out) > 20_000 {
		t.Fatalf("fitPNG = %d bytes, %v; want at most 20000", len(out), ok)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(out))
	if err != nil || cfg.Width >= 300 {
		t.Fatalf("not scaled down: %+v %v", cfg, err)
	}
	if _, ok := fitPNG(data, 1000, 10); ok {
		t.Fatal("an impossible budget was met")
	}
}

func TestFitPNGHostile(t *testing.T) {
	t.Parallel()
	if _, ok := fitPNG([]byte("not a png"), 100, 1000); ok {
		t.Fatal("garbage accepted")
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
	if _, ok := fitPNG(bomb, 100, 1<<20); ok {
		t.Fatal("a decompression bomb was decoded")
	}
}
