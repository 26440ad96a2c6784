// SPDX-License-Identifier: GPL-2.0
/* a tiny key/value registry written through /proc/kgym_null */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>


struct kgym_entry {
	const char *key;
	int value;
};

static struct kgym_entry kgym_table[] = {
	{ "alpha", 1 },
	{ "beta", 2 },
};

static noinline struct kgym_entry *kgym_null_lookup(const char *key)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(kgym_table); i++)
		if (!strcmp(kgym_table[i].key, key))
			return &kgym_table[i];
	return NULL;
}

static ssize_t kgym_null_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *off)
{
	char key[16] = {};
	struct kgym_entry *e;

	if (len >= sizeof(key))
		return -EINVAL;
	if (copy_from_user(key, ubuf, len))
		return -EFAULT;
	strim(key);
	e = kgym_null_lookup(key);
	e->value++;
	pr_info("kgym_null: %s -> %d\n", key, e->value);
	return len;
}

static const struct proc_ops kgym_null_ops = {
	.proc_write = kgym_null_write,
};

static int __init kgym_null_init(void)
{
	if (!proc_create("kgym_null", 0222, NULL, &kgym_null_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_null_exit(void)
{
	remove_proc_entry("kgym_null", NULL);
}

module_init(kgym_null_init);
module_exit(kgym_null_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_null");
