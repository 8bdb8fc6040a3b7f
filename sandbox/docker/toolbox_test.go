package docker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/docker"
)

// toolRun runs a request under the default limits with a timeout long enough for a
// cold LibreOffice or Tesseract on a busy machine, and fails the test unless it
// succeeds; it returns stdout.
func toolRun(t *testing.T, sb sandbox.Sandbox, req sandbox.Request) string {
	t.Helper()
	req.ID = "tool-" + time.Now().Format("150405.000000000")
	req.Timeout = 3 * time.Minute
	out, err := sb.Run(context.Background(), req, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("%s\n%+v %+v %v", req.Code, out, out.Error, err)
	}
	return out.Stdout
}

// Each tool of the toolbox (README, "Toolbox") does its job in a real sandbox of the
// full image under the default limits (512 MB, 1 CPU, 128 pids, read-only root, uid
// 1000, HOME=/tmp, no network): files written and read back, converted, rendered,
// recognised.
func TestToolbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest")
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })
	py := func(t *testing.T, code string) string {
		t.Helper()
		return toolRun(t, sb, sandbox.Request{Code: code})
	}
	sh := func(t *testing.T, code string) string {
		t.Helper()
		return toolRun(t, sb, sandbox.Request{Language: sandbox.Bash, Code: code})
	}

	t.Run("xlsx", func(t *testing.T) {
		got := py(t, `import openpyxl, xlsxwriter
wb = xlsxwriter.Workbook("outputs/x.xlsx"); ws = wb.add_worksheet("Totals")
ws.write_row(0, 0, ["item", "amount"]); ws.write_row(1, 0, ["发票", 41.5]); ws.write_formula(2, 1, "=B2*2")
wb.close()
wb = openpyxl.load_workbook("outputs/x.xlsx"); ws = wb["Totals"]
ws["C1"] = "checked"; wb.save("outputs/y.xlsx")
ws = openpyxl.load_workbook("outputs/y.xlsx")["Totals"]
print(ws["A2"].value, ws["B2"].value, ws["B3"].value, ws["C1"].value)`)
		if got != "发票 41.5 =B2*2 checked\n" {
			t.Fatalf("xlsx read back %q", got)
		}
	})

	t.Run("docx", func(t *testing.T) {
		got := py(t, `import docx
doc = docx.Document(); doc.add_heading("Quarterly report", 1); doc.add_paragraph("Revenue grew 12% 收入增长")
t = doc.add_table(rows=1, cols=2); t.cell(0, 0).text = "Q1"; t.cell(0, 1).text = "100"
doc.save("report.docx")
doc = docx.Document("report.docx")
print("|".join(p.text for p in doc.paragraphs), doc.tables[0].cell(0, 1).text)`)
		if got != "Quarterly report|Revenue grew 12% 收入增长 100\n" {
			t.Fatalf("docx read back %q", got)
		}
	})

	t.Run("libreoffice docx to pdf", func(t *testing.T) {
		// report.docx is the docx subtest's; user code just calls soffice.
		got := sh(t, `test -f report.docx || { echo "no report.docx: the docx subtest failed"; exit 1; }
soffice --headless --convert-to pdf --outdir outputs report.docx >/dev/null
pdftotext outputs/report.pdf - | tr -s ' \n' ' '`)
		if !strings.Contains(got, "Quarterly report") || !strings.Contains(got, "收入增长") {
			t.Fatalf("LibreOffice's PDF has text %q", got)
		}
	})

	t.Run("pdf text, pages and qpdf", func(t *testing.T) {
		got := py(t, `from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas
c = canvas.Canvas("outputs/invoice.pdf", pagesize=A4)
c.setFont("Helvetica", 14); c.drawString(72, 760, "Invoice total: 1234.50 EUR"); c.showPage()
c.drawString(72, 760, "Second page"); c.save()
import pypdf, subprocess
from pdfminer.high_level import extract_text
r = pypdf.PdfReader("outputs/invoice.pdf")
print(len(r.pages), "pypdf:", r.pages[0].extract_text().strip())
print("pdfminer:", extract_text("outputs/invoice.pdf", page_numbers=[0]).strip())
print("pdftotext:", subprocess.run(["pdftotext", "-f", "1", "-l", "1", "outputs/invoice.pdf", "-"], capture_output=True, text=True, check=True).stdout.strip())
print(subprocess.run(["qpdf", "--check", "outputs/invoice.pdf"], capture_output=True, text=True).returncode)
open("outputs/broken.pdf", "wb").write(open("outputs/invoice.pdf", "rb").read()[:600])
print(subprocess.run(["qpdf", "--check", "outputs/broken.pdf"], capture_output=True, text=True).returncode != 0)`)
		want := "2 pypdf: Invoice total: 1234.50 EUR\npdfminer: Invoice total: 1234.50 EUR\npdftotext: Invoice total: 1234.50 EUR\n0\nTrue\n"
		if got != want {
			t.Fatalf("pdf:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("pdf page to png", func(t *testing.T) {
		got := py(t, `import fitz, subprocess
from PIL import Image
doc = fitz.open("outputs/invoice.pdf")
doc[0].get_pixmap(dpi=72).save("outputs/page-fitz.png")
subprocess.run(["pdftoppm", "-png", "-r", "72", "-f", "1", "-l", "1", "-singlefile", "outputs/invoice.pdf", "outputs/page-poppler"], check=True)
for p in ("outputs/page-fitz.png", "outputs/page-poppler.png"):
    im = Image.open(p).convert("L")
    print(im.size, im.getextrema()[0] < 100)`)
		// A4 (595.3 × 841.9 pt) at 72 dpi, rounded up, with dark text on it.
		if got != "(596, 842) True\n(596, 842) True\n" {
			t.Fatalf("rendered pages: %q", got)
		}
	})

	t.Run("ocr chinese and english", func(t *testing.T) {
		got := py(t, `from PIL import Image, ImageDraw, ImageFont
import subprocess
font = ImageFont.truetype("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 48, index=2)  # SC
im = Image.new("L", (900, 260), 255); d = ImageDraw.Draw(im)
d.text((40, 40), "Invoice number 4711", font=font, fill=0)
d.text((40, 140), "合同总金额人民币", font=font, fill=0)
im.save("scan.png")
print(subprocess.run(["tesseract", "scan.png", "-", "-l", "chi_sim+eng"], capture_output=True, text=True, check=True).stdout)`)
		flat := strings.Join(strings.Fields(got), "")
		if !strings.Contains(flat, "Invoicenumber4711") || !strings.Contains(flat, "合同总金额人民币") {
			t.Fatalf("OCR read %q", got)
		}
	})

	t.Run("matplotlib cjk title", func(t *testing.T) {
		got := py(t, `import warnings, matplotlib.pyplot as plt
from matplotlib import font_manager
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fig, ax = plt.subplots(); ax.bar(["一月", "二月"], [3, 5]); ax.set_title("季度销售额 売上 매출")
    fig.savefig("outputs/chart.png"); plt.close(fig)
print(len([w for w in caught if "missing from" in str(w.message)]))
print(font_manager.FontProperties(family=plt.rcParams["font.family"]).get_family()[-1])`)
		if got != "0\nNoto Sans CJK JP\n" {
			t.Fatalf("CJK chart: %q, want no missing-glyph warnings", got)
		}
	})

	t.Run("cairosvg", func(t *testing.T) {
		got := py(t, `import cairosvg
from PIL import Image
svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80"><rect width="120" height="80" fill="#ff0000"/></svg>'
cairosvg.svg2png(bytestring=svg, write_to="outputs/red.png")
cairosvg.svg2pdf(bytestring=svg, write_to="outputs/red.pdf")
im = Image.open("outputs/red.png").convert("RGB")
print(im.size, im.getpixel((60, 40)), open("outputs/red.pdf", "rb").read(5))`)
		if got != "(120, 80) (255, 0, 0) b'%PDF-'\n" {
			t.Fatalf("cairosvg: %q", got)
		}
	})

	t.Run("pandoc", func(t *testing.T) {
		got := sh(t, `printf '# Title\n\nSome *text*.\n' | pandoc -f markdown -t html`)
		if !strings.Contains(got, "<em>text</em>") {
			t.Fatalf("pandoc: %q", got)
		}
	})

	t.Run("node script", func(t *testing.T) {
		got := sh(t, `cat > hello.js <<'EOF'
const fs = require("fs");
fs.writeFileSync("outputs/from-node.json", JSON.stringify({sum: [1, 2, 3].reduce((a, b) => a + b)}));
console.log(process.version.startsWith("v"), fs.readFileSync("outputs/from-node.json", "utf8"));
EOF
node hello.js; npm --version >/dev/null && echo npm ok`)
		if got != "true {\"sum\":6}\nnpm ok\n" {
			t.Fatalf("node: %q", got)
		}
	})

	t.Run("pip", func(t *testing.T) {
		got := sh(t, `python3 -m pip --version >/dev/null && echo ok`)
		if got != "ok\n" {
			t.Fatalf("pip: %q", got)
		}
	})
}

// JavaScript is a language of Sandbox.Run: it runs with node in the workspace, its
// output and outputs are collected, errors are results, a timeout stops it and the
// sandbox runs on.
func TestToolboxJavascript(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest")
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })
	js := func(code string, timeout time.Duration) sandbox.Outcome {
		t.Helper()
		out, err := sb.Run(ctx, sandbox.Request{ID: "js-" + time.Now().Format("150405.000000000"), Language: sandbox.Javascript, Code: code, Timeout: timeout}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	toolRun(t, sb, sandbox.Request{Code: `open("data.csv", "w").write("a,b\n1,2\n")`})
	out := js(`const fs = require("fs");
const rows = fs.readFileSync("data.csv", "utf8").trim().split("\n");
fs.writeFileSync("outputs/rows.txt", String(rows.length));
const v = await Promise.resolve(42);
console.log(rows[1], v, __dirname);
console.error("to stderr");`, time.Minute)
	if out.Status != sandbox.Succeeded || out.Stdout != "1,2 42 /workspace\n" || out.Stderr != "to stderr\n" ||
		len(out.Outputs) != 1 || out.Outputs[0] != "outputs/rows.txt" {
		t.Fatalf("javascript run: %+v", out)
	}

	out = js("let x = 1;\nthrow new TypeError('bad input')", time.Minute)
	if out.Status != sandbox.Failed || out.ExitCode != 1 || out.Error == nil || out.Error.Name != "NonZeroExit" ||
		!strings.Contains(out.Stderr, "TypeError: bad input") || !strings.Contains(out.Stderr, "<code>.js:2") {
		t.Fatalf("javascript error: %+v %+v", out, out.Error)
	}

	// A big program passes whole (the code is not an argument).
	big := strings.Repeat("// filler line of a big generated program\n", 30000) + "console.log('big ok')"
	if out = js(big, time.Minute); out.Status != sandbox.Succeeded || out.Stdout != "big ok\n" {
		t.Fatalf("1 MiB of javascript: %+v", out)
	}

	// Long enough for node to start on a busy machine, so the loop is what is stopped.
	start := time.Now()
	out = js("console.log('spinning'); for (;;) {}", 10*time.Second)
	if out.Status != sandbox.TimedOut || !strings.Contains(out.Stdout, "spinning") {
		t.Fatalf("javascript timeout: %+v", out)
	}
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("a 10 s timeout took %s", took)
	}
	// The kernel and the workspace survive; Node keeps no state between runs.
	if out = js("console.log(typeof x, require('fs').readFileSync('outputs/rows.txt', 'utf8'))", time.Minute); out.Status != sandbox.Succeeded || out.Stdout != "undefined 2\n" {
		t.Fatalf("after the timeout: %+v", out)
	}
}

// manifest is /opt/codeinterp/runtimes.json, the image's account of itself.
type manifest struct {
	Image     string `json:"image"`
	Languages []struct {
		Name, Version string
	} `json:"languages"`
	Packages []struct {
		Name, Version, Kind string
		Languages           []string
	} `json:"packages"`
	Missing []struct {
		Name, Kind, Why string
	} `json:"missing"`
}

func readManifest(t *testing.T, sb sandbox.Sandbox) manifest {
	t.Helper()
	var m manifest
	if err := json.Unmarshal([]byte(toolRun(t, sb, sandbox.Request{Language: sandbox.Bash, Code: "cat /opt/codeinterp/runtimes.json"})), &m); err != nil {
		t.Fatal(err)
	}
	for _, miss := range m.Missing {
		if miss.Why == "" {
			t.Errorf("missing %s says not why", miss.Name)
		}
	}
	return m
}

func (m manifest) has(kind, name string) string {
	for _, p := range m.Packages {
		if p.Kind == kind && p.Name == name {
			return p.Version
		}
	}
	return ""
}

func (m manifest) language(name string) string {
	for _, l := range m.Languages {
		if l.Name == name {
			return l.Version
		}
	}
	return ""
}

func (m manifest) missing(name string) bool {
	for _, p := range m.Missing {
		if p.Name == name {
			return true
		}
	}
	return false
}

// The full image says what it has, with versions, and what is missing and why.
func TestToolboxManifest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDocker(t, "citest")
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })
	m := readManifest(t, sb)
	if m.Image != "full" {
		t.Errorf("image %q, want full", m.Image)
	}
	for _, l := range []string{"python", "bash", "javascript"} {
		if m.language(l) == "" {
			t.Errorf("language %s missing or without a version: %+v", l, m.Languages)
		}
	}
	for _, p := range [][2]string{{"python", "numpy"}, {"python", "pip"}, {"python", "CairoSVG"}, {"tool", "libreoffice"},
		{"tool", "tesseract"}, {"tool", "qpdf"}, {"tool", "poppler"}, {"tool", "node"}, {"tool", "npm"}, {"tool", "pandoc"}} {
		if m.has(p[0], p[1]) == "" {
			t.Errorf("%s package %s not listed with a version", p[0], p[1])
		}
	}
	for _, p := range m.Packages {
		if p.Name == "tesseract" && strings.Join(p.Languages, " ") != "chi_sim chi_tra eng jpn kor" {
			t.Errorf("tesseract languages %v", p.Languages)
		}
	}
	for _, name := range []string{"numpy", "libreoffice", "node"} {
		if m.missing(name) {
			t.Errorf("%s listed as missing", name)
		}
	}
	// Offline, what Debian lacks is missing, unless the image was built with it.
	if m.has("python", "python-pptx") == "" && !m.missing("python-pptx") {
		t.Error("python-pptx neither installed nor listed as missing")
	}
}

// The slim image (codeinterp/sandbox-slim, or CODEINTERP_SANDBOX_SLIM_IMAGE) has no
// Node and no LibreOffice and says so: javascript fails as a result naming the
// cause, and its manifest lists them as missing.
func TestToolboxSlim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := docker.New(newClient(t), docker.Config{
		Image:   cmp.Or(os.Getenv("CODEINTERP_SANDBOX_SLIM_IMAGE"), "codeinterp/sandbox-slim:latest"),
		Prefix:  "citest",
		Grace:   time.Second,
		Runtime: os.Getenv("CODEINTERP_SANDBOX_RUNTIME"),
	})
	sb, err := d.Create(ctx, sandbox.Spec{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })

	out, err := sb.Run(ctx, sandbox.Request{ID: "slim-js", Language: sandbox.Javascript, Code: "console.log(1)", Timeout: time.Minute}, nil)
	if err != nil || out.Status != sandbox.Failed || out.Error == nil || out.Error.Name != "LanguageUnavailable" ||
		out.Error.Value != "javascript is not installed in this sandbox image" || out.ExitCode != 127 {
		t.Fatalf("javascript on the slim image: %+v %+v %v", out, out.Error, err)
	}
	if got := toolRun(t, sb, sandbox.Request{Code: "import numpy, cairosvg; print('python ok')"}); got != "python ok\n" {
		t.Fatalf("python after javascript: %q", got)
	}

	m := readManifest(t, sb)
	if m.Image != "slim" || m.language("javascript") != "" || m.language("python") == "" {
		t.Errorf("slim manifest: image %q, languages %+v", m.Image, m.Languages)
	}
	if m.has("python", "numpy") == "" || m.has("tool", "qpdf") == "" || m.has("tool", "libreoffice") != "" {
		t.Error("slim manifest lists the wrong packages")
	}
	for _, name := range []string{"libreoffice", "node", "npm", "docx"} {
		if !m.missing(name) {
			t.Errorf("%s not listed as missing from the slim image", name)
		}
	}
}
