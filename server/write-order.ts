/**
 * Entries in the order they were written, oldest first; a dropped one stays until reached, then
 * is skipped (once), and the list is compacted when most of it is dropped ones. A Set or Map
 * would do the same in fewer lines, but one whose oldest is deleted over and over keeps the
 * deleted slots until it is rehashed, and each `keys().next()` walks them: one refusal naming
 * 16,384 images into a full fallback memory cost ~10x what 4,096 did, and a Responses answer of
 * 64,000 calls into a full item store ~10x what 16,000 did (~4x expected: the redteam budget
 * tests). The fallback memory and the Responses item store keep their oldest-first orders here.
 */
export class WriteOrder<E extends { readonly gone: boolean }> {
  private items: E[] = [];
  private head = 0;
  /** Entries written and not dropped. */
  live = 0;

  push(e: E): void {
    this.items.push(e);
    this.live++;
  }

  /** One of its entries was dropped (the caller set its `gone`). */
  dropped(): void {
    this.live--;
    if (this.items.length - this.head > 2 * this.live + 64) {
      this.items = this.items.slice(this.head).filter((e) => !e.gone);
      this.head = 0;
    }
  }

  oldest(): E | undefined {
    while (this.head < this.items.length && this.items[this.head]!.gone) this.head++;
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return this.items[this.head];
  }
}
