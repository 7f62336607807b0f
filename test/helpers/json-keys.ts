/**
 * The keys a JSON object's text repeats at any depth (JSON.parse keeps the last and hides them):
 * `{"goal":"x","goal":"x"}` gives ['goal'].
 */
export function repeatedKeys(text: string): string[] {
  const repeated: string[] = [];
  const scopes: Array<Set<string> | null> = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '{') scopes.push(new Set());
    else if (c === '[') scopes.push(null);
    else if (c === '}' || c === ']') scopes.pop();
    else if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const scope = scopes.at(-1);
      if (scope && /^\s*:/.test(text.slice(j + 1, j + 8))) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (scope.has(key)) repeated.push(key);
        scope.add(key);
      }
      i = j;
    }
    i++;
  }
  return repeated;
}
