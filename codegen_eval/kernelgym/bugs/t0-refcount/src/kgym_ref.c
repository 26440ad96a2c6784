// SPDX-License-Identifier: GPL-2.0
/* a shared buffer handed out with a reference count */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/refcount.h>

struct kgym_buf {
	refcount_t ref;
	char data[32];
};

static struct kgym_buf kgym_shared = { .ref = REFCOUNT_INIT(1) };
static DEFINE_MUTEX(kgym_lock);

static noinline void kgym_ref_put(struct kgym_buf *b)
{
	if (refcount_dec_and_test(&b->ref))
		pr_info("kgym_ref: last reference dropped\n");
}

static int kgym_ref_fill(struct kgym_buf *b, const char *src)
{
	if (strlen(src) >= sizeof(b->data)) {
		kgym_ref_put(b);
		return -E2BIG;
	}
	refcount_inc(&b->ref);
	strscpy(b->data, src, sizeof(b->data));
	pr_info("kgym_ref: stored %s\n", b->data);
	kgym_ref_put(b);
	return 0;
}

static ssize_t kgym_ref_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *off)
{
	char *s;
	int err;

	s = memdup_user_nul(ubuf, len);
	if (IS_ERR(s))
		return PTR_ERR(s);
	mutex_lock(&kgym_lock);
	err = kgym_ref_fill(&kgym_shared, strim(s));
	mutex_unlock(&kgym_lock);
	kfree(s);
	return err ? err : len;
}

static const struct proc_ops kgym_ref_ops = {
	.proc_write = kgym_ref_write,
};

static int __init kgym_ref_init(void)
{
	if (!proc_create("kgym_ref", 0222, NULL, &kgym_ref_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_ref_exit(void)
{
	remove_proc_entry("kgym_ref", NULL);
}

module_init(kgym_ref_init);
module_exit(kgym_ref_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_ref");
