// heap: V8's own heap limit. Run as `node --max-old-space-size=32 heap.js MODE`.
//
//   fill     keeps arrays until V8 reaches its heap limit: "FATAL ERROR: … JavaScript heap out
//            of memory", abort -> out_of_memory naming --max-old-space-size
//   some MB  keeps MB megabytes of arrays (below the limit), then exits 0 -> ok
const mode = process.argv[2];
const keep = [];
if (mode === "fill") {
  for (;;) keep.push(new Array(100000).fill(1.5));
} else if (mode === "some") {
  const mb = Number(process.argv[3] || 8);
  // 100000 doubles are about 0.8 MB.
  for (let i = 0; i < Math.ceil(mb / 0.8); i++) keep.push(new Array(100000).fill(1.5));
  console.log(`kept ${keep.length} arrays`);
} else {
  console.error(`heap: unknown mode ${mode}`);
  process.exit(64);
}
