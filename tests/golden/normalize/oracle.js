// Body of an async function run by `upstream-frames eval` (sc = @oh-my-pi/snapcompact).
// REQUEST and RESPONSE (file paths) are prepended by make_golden.py.  Reads the request JSON,
// asks the reference for every answer, writes the response JSON.
const req = JSON.parse(await Bun.file(REQUEST).text());
const res = {};
const fontShape = (font) => ({ font });
if (req.normalize) {
  res.normalize = req.normalize.map((text) => {
    const row = {};
    for (const font of req.fonts) {
      const scan = sc.scanRenderability(text, { shape: fontShape(font) });
      row[font] = [sc.normalize(text, { font }), scan.unrenderableRatio, scan.isSafe];
    }
    return row;
  });
}
if (req.strip) res.strip = req.strip.map((text) => Bun.stripANSI(text));
if (req.dim) res.dim = req.dim.map((text) => sc.dimStopwords(text));
if (req.wrap) res.wrap = req.wrap.map(([text, cols, wide]) => sc.wrap(text, cols, wide));
if (req.resolve) {
  const target = req.resolve.target;
  res.resolve = req.resolve.texts.map((text) => sc.resolveShapeForText(text, target).font);
  res.resolveDefault = sc.resolveShape(target).font;
}
if (req.codespace) {
  // Every code point, DIM_ON-separated so each one is decided in isolation, in fixed chunks.
  const { chunk, fonts, full } = req.codespace;
  const out = {};
  for (const font of fonts) {
    const rows = [];
    for (let lo = 0; lo <= 0x10ffff; lo += chunk) {
      const parts = ["\u000e"];
      for (let cp = lo; cp < Math.min(lo + chunk, 0x110000); cp++) parts.push(String.fromCodePoint(cp), "\u000e");
      parts.push("\ue000");
      const text = parts.join("");
      const norm = sc.normalize(text, { font });
      const hash = new Bun.CryptoHasher("sha256").update(norm).digest("hex");
      rows.push([hash, sc.scanRenderability(text, { font }).unrenderableRatio, full ? norm : null]);
    }
    out[font] = rows;
  }
  res.codespace = out;
}
await Bun.write(RESPONSE, JSON.stringify(res));
return Object.keys(res);
