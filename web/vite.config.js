// Build of the web page served by `mineru-cpp serve` at `/`.
// Output: dist/index.html, dist/assets/app.js, dist/assets/app.css, dist/assets/fonts/*.woff2, and
// the chunks loaded only for a document with a Mermaid chart (dist/assets/mermaid.core.js and others).
// File names are stable (no content hashes) so the server can list or embed them; relative URLs
// (base './') so the page also works behind a path prefix.
import { defineConfig } from 'vite';

// KaTeX's stylesheet lists every font three times (woff2, woff, ttf). Every browser we target reads
// woff2, so keep only that: 20 font files instead of 60.
function katexWoff2Only() {
  return {
    name: 'katex-woff2-only',
    enforce: 'pre',
    transform(code, id) {
      if (!/katex(\.min)?\.css$/.test(id.split('?')[0])) return null;
      const out = code
        .replace(/,\s*url\([^)]*\.woff\)\s*format\(["']woff["']\)/g, '')
        .replace(/,\s*url\([^)]*\.ttf\)\s*format\(["']truetype["']\)/g, '')
        .replace(/font-display:\s*block/g, 'font-display:swap');
      return { code: out, map: null };
    },
  };
}

// `npm run dev` talks to the mock server (npm run mock) or a real one: MINERU_API=http://host:port.
const api = process.env.MINERU_API || 'http://127.0.0.1:8787';
const proxied = ['/tasks', '/v1', '/health', '/metrics', '/file_parse'];

export default defineConfig({
  base: './',
  plugins: [katexWoff2Only()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2020',
    sourcemap: false,
    reportCompressedSize: false,
    // mermaid's chunks (mermaid.core, some diagram types) are 0.6-0.7 MB; they load only when a
    // document has a chart, so they do not weigh on the page.
    chunkSizeWarningLimit: 1000,
    rollupOptions: {
      output: {
        entryFileNames: 'assets/app.js',
        chunkFileNames: 'assets/[name].js',
        assetFileNames: (info) => {
          const name = (info.names && info.names[0]) || info.name || '';
          if (/\.(woff2?|ttf)$/.test(name)) return 'assets/fonts/[name][extname]';
          if (/\.css$/.test(name)) return 'assets/app.css';
          return 'assets/[name][extname]';
        },
      },
    },
  },
  server: {
    proxy: Object.fromEntries(proxied.map((p) => [p, { target: api, changeOrigin: false }])),
  },
});
