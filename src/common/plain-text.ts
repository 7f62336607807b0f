/**
 * Untrusted output made safe to print on a terminal or quote: escape sequences (colours, cursor
 * moves, titles, hyperlinks) and other control characters removed, line ends normalised, tabs as
 * spaces. A task's output must never drive the reader's terminal.
 */
export function plainText(text: string): string {
  return (
    withoutEscapes(text)
      .replace(/\r\n?/g, '\n')
      .replace(/\t/g, ' ')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: this strips control characters from untrusted output
      .replace(/[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]/g, '')
  );
}

/**
 * The text without its terminal escape sequences (colours, cursor moves, titles, hyperlinks), in
 * their 7-bit (ESC [) and 8-bit (CSI, OSC) forms; other characters are kept. For output kept as
 * data (`logs --json`): a colour code is noise there, not content.
 */
export function withoutEscapes(text: string): string {
  return (
    text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: this strips terminal escapes from untrusted output
      .replace(/(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b\]|\x9d)[^\x07\x1b\x9c\x9d]*(?:\x07|\x1b\\|\x9c)|\x1b[@-Z\\-_]/g, '')
  );
}
