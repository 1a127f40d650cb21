// Type-aware lint: the rules that matter here catch unawaited promises, which in a coordinator
// mean lost writes and unhandled rejections.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'bin/**',
      'scripts/**/*.mjs',
      'scripts/**/*.cjs',
      'eslint.config.js',
    ],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'before', 'after'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
    },
  },
  {
    // Names say what they hold (issue 16): no one-letter variables, parameters or bindings in
    // shipping code, nor in the conformance suite, which is read as the specification of the
    // Store. `_` stays allowed for a slot that is deliberately unused.
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: {
      'id-length': ['error', { min: 2, properties: 'never', exceptions: ['_'] }],
      // A name means one thing in a scope: an inner binding never hides an outer one.
      '@typescript-eslint/no-shadow': 'error',
    },
  },
);
