// SPDX-License-Identifier: Apache-2.0
// The console is served by mf-server at /ui/ (docs/console.md). CMake builds it into
// <build>/share/modelferry/ui (MF_UI_OUT), which is also what `cmake --install` installs.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/ui/',
  build: {
    outDir: process.env.MF_UI_OUT || 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    chunkSizeWarningLimit: 200,
  },
});
