// Zips made and read in the page. The master takes a package as a zip body (as `headwater
// submit` sends one); a package of a few source files needs no compression, so the page
// builds a stored zip itself: per file a local header and the bytes, then the central
// directory and its end record, with the CRC-32 the format asks for. Reading is the names
// only (the central directory of an uploaded zip, compressed or not), to offer its entry
// files; the master checks the package itself.

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const DOS_DATE = (0 << 9) | (1 << 5) | 1; // 1980-01-01, as build_package's epoch

function view(size, fields) {
  const v = new DataView(new ArrayBuffer(size));
  for (const [at, value, n] of fields) {
    if (n === 4) v.setUint32(at, value >>> 0, true);
    else v.setUint16(at, value, true);
  }
  return v;
}

// A zip of `files` ([{name, data: Uint8Array}], names as paths inside the package), stored.
export function storedZip(files) {
  const parts = [];
  const central = [];
  let offset = 0;
  for (const { name, data } of files) {
    const nameBytes = new TextEncoder().encode(name);
    const crc = crc32(data);
    const sizes = [[14, crc, 4], [18, data.length, 4], [22, data.length, 4]];
    const local = view(30, [
      [0, 0x04034b50, 4], [4, 20, 2], [6, 0x0800, 2], [8, 0, 2], [10, 0, 2], [12, DOS_DATE, 2],
      ...sizes, [26, nameBytes.length, 2], [28, 0, 2],
    ]);
    const entry = view(46, [
      [0, 0x02014b50, 4], [4, 0x0314, 2], [6, 20, 2], [8, 0x0800, 2], [10, 0, 2], [12, 0, 2],
      [14, DOS_DATE, 2], [16, crc, 4], [20, data.length, 4], [24, data.length, 4],
      [28, nameBytes.length, 2], [30, 0, 2], [32, 0, 2], [34, 0, 2], [36, 0, 2],
      [38, 0o100644 * 0x10000, 4], [42, offset, 4],
    ]);
    parts.push(local, nameBytes, data);
    central.push(entry, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const size = central.reduce((n, p) => n + p.byteLength, 0);
  const end = view(22, [
    [0, 0x06054b50, 4], [4, 0, 2], [6, 0, 2], [8, files.length, 2], [10, files.length, 2],
    [12, size, 4], [16, offset, 4], [20, 0, 2],
  ]);
  return new Blob([...parts, ...central, end], { type: "application/zip" });
}

// The names of the files in the zip `bytes` (a Uint8Array), folders left out; null when it
// is not a zip the page can read (no end record, or a ZIP64 one).
export function zipNames(bytes) {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 0xffff); at--) {
    if (v.getUint32(at, true) === 0x06054b50) {
      end = at;
      break;
    }
  }
  if (end < 0) return null;
  const count = v.getUint16(end + 10, true);
  let at = v.getUint32(end + 16, true);
  if (count === 0xffff || at === 0xffffffff) return null;
  const names = [];
  const utf8 = new TextDecoder();
  for (let i = 0; i < count; i++) {
    if (at + 46 > bytes.length || v.getUint32(at, true) !== 0x02014b50) return null;
    const n = v.getUint16(at + 28, true);
    const skip = n + v.getUint16(at + 30, true) + v.getUint16(at + 32, true);
    const name = utf8.decode(bytes.subarray(at + 46, at + 46 + n));
    if (!name.endsWith("/")) names.push(name);
    at += 46 + skip;
  }
  return names;
}

// The likeliest topology file among `names`: a topology.py (the shallowest), else the first
// .py file whose name does not start with "_", else the first .py file; null for none.
export function guessEntry(names) {
  const py = names.filter((n) => n.endsWith(".py"));
  const depth = (n) => n.split("/").length;
  const base = (n) => n.split("/").pop();
  const named = py.filter((n) => base(n) === "topology.py").sort((a, b) => depth(a) - depth(b));
  return named[0] || py.find((n) => !base(n).startsWith("_")) || py[0] || null;
}
