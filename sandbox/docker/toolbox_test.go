package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// toolRun runs a request under the default limits with a timeout long enough for a
// cold LibreOffice or Tesseract on a busy machine, and fails the test unless it
// succeeds; it returns stdout.
// toolboxSandbox creates a sandbox of the default (full) image with the default
// limits, removed when the test ends.
func toolboxSandbox(t *testing.T) sandbox.Sandbox {
	t.Helper()
	sb, err := newDocker(t, "citest").Create(context.Background(), sandbox.Spec{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Remove(context.Background()) })
	return sb
}

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
	sb := toolboxSandbox(t)
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
